package wasm_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/leatdev/leat/app"
	"github.com/leatdev/leat/internal/tools/redistest"
	"github.com/leatdev/leat/internal/tools/wasmtest"
	"github.com/leatdev/leat/task"
	"github.com/leatdev/leat/task/wasm"
	"github.com/redis/go-redis/v9"
)

func quietLogger() *slog.Logger {
	if os.Getenv("LEAT_TEST_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

// cluster is a test's Redis and the workers it started.
type cluster struct {
	t      *testing.T
	client *redis.Client
	prefix string
}

func newCluster(t *testing.T) *cluster {
	c, prefix := redistest.Client(t)
	return &cluster{t: t, client: c, prefix: prefix}
}

func (c *cluster) app(id string) *app.App {
	a, err := app.New(app.Config{Name: "shop", Client: c.client, KeyPrefix: c.prefix, WorkerID: id, Logger: quietLogger()})
	if err != nil {
		c.t.Fatal(err)
	}
	c.t.Cleanup(func() { a.Close() })
	return a
}

// worker starts a worker running queue with the module name, until the
// test ends.
func (c *cluster) worker(id, queue, name string, cfg wasm.Config, opts ...task.Option) {
	t := c.t
	a := c.app(id)
	cfg.Registry, cfg.Name, cfg.CacheDir = wasm.NewRegistry(a, cacheDir(t)), name, cacheDir(t)
	if cfg.Refresh == 0 {
		cfg.Refresh = 100 * time.Millisecond
	}
	cfg.Logger = quietLogger()
	h, err := wasm.New(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := task.Handle(a, queue, h.Handle, opts...); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("worker %s: %v", id, err)
		}
		h.Close(context.Background())
	})
}

// queue declares queue with opts and returns it.
func (c *cluster) queue(name string, opts ...task.Option) *task.Queue[json.RawMessage, json.RawMessage] {
	q, err := task.Declare[json.RawMessage, json.RawMessage](c.app("producer-"+name), name, opts...)
	if err != nil {
		c.t.Fatal(err)
	}
	return q
}

func (c *cluster) put(name, path string, o wasm.PutOptions) wasm.Version {
	v, err := wasm.NewRegistry(c.app("cli"), cacheDir(c.t)).Put(context.Background(), name, wasmtest.Read(c.t, path), o)
	if err != nil {
		c.t.Fatal(err)
	}
	return v
}

func wait(t *testing.T, q *task.Queue[json.RawMessage, json.RawMessage], id string) *task.Info {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	in, err := q.Wait(ctx, id)
	if err != nil {
		t.Fatalf("wait %s: %v", id, err)
	}
	return in
}

// TestThousandTasks runs 1,000 tasks of each contract across two
// workers, with pooled instances: all succeed with the right result.
// (Instances per task are run by the other tests; examples/wasm runs
// 1,000 tasks on worker processes.)
func TestThousandTasks(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		contract string
		pool     bool
	}{{"lines", true}, {"reactor", true}} {
		t.Run(c.contract, func(t *testing.T) {
			cl := newCluster(t)
			path := wasmtest.Lines(t, "v1")
			if c.contract == "reactor" {
				path = wasmtest.Reactor(t, "v1")
			}
			cl.put("words", path, wasm.PutOptions{Reusable: c.pool})
			q := cl.queue("words", task.Concurrency(10))
			cl.worker("w1", "words", "words", wasm.Config{Pool: c.pool}, task.Concurrency(10))
			cl.worker("w2", "words", "words", wasm.Config{Pool: c.pool}, task.Concurrency(10))
			const n = 1000
			payloads := make([]json.RawMessage, n)
			for i := range payloads {
				payloads[i] = json.RawMessage(fmt.Sprintf(`{"text": %q}`, strings.Repeat("w ", i%50)))
			}
			ids, err := q.EnqueueMany(context.Background(), payloads)
			if err != nil {
				t.Fatal(err)
			}
			workers := map[string]int{}
			for i, id := range ids {
				in := wait(t, q, id)
				want := fmt.Sprintf(`{"version":"v1","words":%d}`, i%50)
				if in.State != task.Succeeded || string(in.Result) != want {
					t.Fatalf("task %d: %s %s %q, want %s", i, in.State, in.Result, in.Error, want)
				}
				workers[in.Worker]++
			}
			if len(workers) != 2 {
				t.Errorf("tasks per worker: %v, want both", workers)
			}
			logs, err := q.Logs(context.Background(), ids[7])
			if err != nil || len(logs) == 0 {
				t.Fatalf("logs: %v, %v", logs, err)
			}
		})
	}
}

// TestFailuresInQueue: a loop stops at its timeout, an allocation past
// the limit fails, a trap is retried, and the worker goes on.
func TestFailuresInQueue(t *testing.T) {
	t.Parallel()
	cl := newCluster(t)
	cl.put("words", wasmtest.Reactor(t, "v1"), wasm.PutOptions{})
	opts := []task.Option{task.Concurrency(4), task.Backoff(10*time.Millisecond, 20*time.Millisecond)}
	q := cl.queue("words", opts...)
	cl.worker("w1", "words", "words", wasm.Config{Sandbox: wasm.Sandbox{MemoryPages: 256}}, opts...)
	ctx := context.Background()
	loop, _ := q.Enqueue(ctx, json.RawMessage(`{"loop": true}`), task.WithTimeout(time.Second), task.WithMaxRetries(0))
	mem, _ := q.Enqueue(ctx, json.RawMessage(`{"alloc_mb": 64}`), task.WithMaxRetries(0))
	trap, _ := q.Enqueue(ctx, json.RawMessage(`{"panic": true}`), task.WithMaxRetries(2))
	failed, _ := q.Enqueue(ctx, json.RawMessage(`{"fail": "bad input", "retry": false}`), task.WithMaxRetries(2))
	ok, _ := q.Enqueue(ctx, json.RawMessage(`{"text": "still here"}`))

	if in := wait(t, q, loop); in.State != task.Dead || !strings.Contains(in.Error, "timed out") {
		t.Errorf("loop: %s %q", in.State, in.Error)
	}
	if in := wait(t, q, mem); in.State != task.Dead || !strings.Contains(in.Error, "out of memory") {
		t.Errorf("memory: %s %q", in.State, in.Error)
	}
	if in := wait(t, q, trap); in.State != task.Dead || in.Attempts != 3 || !strings.Contains(in.Error, "panic: asked to panic") {
		t.Errorf("trap: %s after %d attempts: %q", in.State, in.Attempts, in.Error)
	}
	if in := wait(t, q, failed); in.State != task.Failed || in.Attempts != 1 || !strings.Contains(in.Error, "bad input") {
		t.Errorf("failed: %s after %d attempts: %q", in.State, in.Attempts, in.Error)
	}
	if in := wait(t, q, ok); in.State != task.Succeeded || string(in.Result) != `{"version":"v1","words":2}` {
		t.Errorf("ok: %s %s %q", in.State, in.Result, in.Error)
	}
	logs, err := q.Logs(ctx, trap)
	if err != nil {
		t.Fatal(err)
	}
	var text []string
	for _, l := range logs {
		text = append(text, l.Line)
	}
	if all := strings.Join(text, "\n"); !strings.Contains(all, "panic: asked to panic") || logs[len(logs)-1].Attempt != 3 {
		t.Errorf("trap's logs:\n%s", all)
	}
}

// TestNewVersion: a new version is picked up by new tasks without a
// restart; a removed module fails the next tasks.
func TestNewVersion(t *testing.T) {
	t.Parallel()
	cl := newCluster(t)
	reg := wasm.NewRegistry(cl.app("cli"), "")
	ctx := context.Background()
	if _, err := reg.Put(ctx, "words", wasmtest.Constant(`{"result": "v1"}`), wasm.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	q := cl.queue("words", task.Concurrency(4))
	cl.worker("w1", "words", "words", wasm.Config{}, task.Concurrency(4))
	id, _ := q.Enqueue(ctx, json.RawMessage(`{}`))
	if in := wait(t, q, id); string(in.Result) != `"v1"` {
		t.Fatalf("v1: %s %q", in.Result, in.Error)
	}
	if v, err := reg.Put(ctx, "words", wasmtest.Constant(`{"result": "v2"}`), wasm.PutOptions{}); err != nil || v.Version != 2 {
		t.Fatalf("put v2: %+v, %v", v, err)
	}
	redistest.Eventually(t, time.Minute, "a task run by v2", func() bool {
		id, err := q.Enqueue(ctx, json.RawMessage(`{}`))
		if err != nil {
			t.Fatal(err)
		}
		return string(wait(t, q, id).Result) == `"v2"`
	})
	// Removed: new tasks fail (and are retried, for a put to come).
	if _, err := reg.Remove(ctx, "words"); err != nil {
		t.Fatal(err)
	}
	redistest.Eventually(t, time.Minute, "a task failed for the module removed", func() bool {
		id, _ := q.Enqueue(ctx, json.RawMessage(`{}`), task.WithMaxRetries(0))
		in := wait(t, q, id)
		return in.State == task.Dead && strings.Contains(in.Error, "no module of that name")
	})
}

// TestRunningTaskFinishesOnOldVersion: a task running when a new version
// is put finishes on the version it started with, while new tasks run the
// new one.
func TestRunningTaskFinishesOnOldVersion(t *testing.T) {
	t.Parallel()
	cl := newCluster(t)
	reg := wasm.NewRegistry(cl.app("cli"), cacheDir(t))
	ctx := context.Background()
	if _, err := reg.Put(ctx, "words", wasmtest.Read(t, wasmtest.Lines(t, "v1")), wasm.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	q := cl.queue("words", task.Concurrency(4))
	cl.worker("w1", "words", "words", wasm.Config{Sandbox: wasm.Sandbox{Dir: dir}}, task.Concurrency(4))
	slow, err := q.Enqueue(ctx, json.RawMessage(`{"text": "a b", "wait_for": "/go"}`))
	if err != nil {
		t.Fatal(err)
	}
	redistest.Eventually(t, time.Minute, "the slow task running", func() bool {
		in, err := q.Info(ctx, slow)
		return err == nil && in.State == task.Active
	})
	if _, err := reg.Put(ctx, "words", wasmtest.Constant(`{"result": "v2"}`), wasm.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	redistest.Eventually(t, time.Minute, "a task run by v2", func() bool {
		id, err := q.Enqueue(ctx, json.RawMessage(`{}`))
		if err != nil {
			t.Fatal(err)
		}
		return string(wait(t, q, id).Result) == `"v2"`
	})
	if err := os.WriteFile(filepath.Join(dir, "go"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if in := wait(t, q, slow); in.State != task.Succeeded || string(in.Result) != `{"version":"v1","words":2}` {
		t.Fatalf("the task started on v1: %s %s %q", in.State, in.Result, in.Error)
	}
}
