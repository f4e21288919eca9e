package cmd

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/leatdev/leat/app"
	"github.com/leatdev/leat/executor"
	"github.com/leatdev/leat/internal/tools/redistest"
	"github.com/leatdev/leat/stream"
)

// tick is the record type of the processing tests.
type tick struct {
	Key string `json:"key" msgpack:"key"`
	N   int    `json:"n" msgpack:"n"`
}

// ticks returns n JSON lines of ticks over 10 keys.
func ticks(n int) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, `{"key":"k%d","n":%d}`+"\n", i%10, i)
	}
	return b.String()
}

// tally records what a processor saw, once per entry.
type tally struct {
	mu   sync.Mutex
	seen map[string]bool // "partition/ID"
}

func (t *tally) add(e *stream.Event[tick]) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.seen == nil {
		t.seen = map[string]bool{}
	}
	t.seen[fmt.Sprintf("%d/%s", e.Partition, e.ID)] = true
}

func (t *tally) count() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.seen)
}

// ticksApp is an app with stream "ticks" (4 partitions) and processor
// "count" recording into tl; events with key fail make it fail. The first
// App it builds is stored in built. Its Setup defaults (short timings) fill
// what the flags leave zero.
type ticksApp struct {
	tl    tally
	fail  string
	built atomic.Pointer[app.App]
}

func (ta *ticksApp) setup(cfg app.Config) (*app.App, error) {
	cfg.Processing = cfg.Processing.Merge(executor.Options{
		LockExpiry: 2 * time.Second, ReadBlock: 200 * time.Millisecond, Grace: 2 * time.Second,
	})
	a, err := app.New(cfg)
	if err != nil {
		return nil, err
	}
	s, err := stream.Declare[tick](a, "ticks", stream.KeyField("key"), stream.Partitions(4))
	if err == nil {
		err = app.Process(a, s, "count", func(ctx context.Context, events *stream.Events[tick]) error {
			for e := range events.All() {
				if ta.fail != "" && e.Record.Key == ta.fail {
					return fmt.Errorf("cannot count %s", e.Record.Key)
				}
				ta.tl.add(e)
			}
			return nil
		})
	}
	if err != nil {
		a.Close()
		return nil, err
	}
	ta.built.CompareAndSwap(nil, a)
	return a, nil
}

// waitApp waits until the worker of ta runs its executors and returns its App.
func (ta *ticksApp) waitApp(t *testing.T, b *background) *app.App {
	t.Helper()
	waitUntil(t, b, "the worker's executors", func() bool {
		a := ta.built.Load()
		return a != nil && len(a.Executors()) > 0
	})
	return ta.built.Load()
}

// background is a CLI command running on its own goroutine.
type background struct {
	cancel context.CancelFunc
	done   chan result
	once   sync.Once
	res    result
}

// start runs the CLI with args in the background; the test's end stops it.
func start(t *testing.T, setup Setup, args ...string) *background {
	ctx, cancel := context.WithCancel(context.Background())
	b := &background{cancel: cancel, done: make(chan result, 1)}
	go func() {
		var stdout, stderr bytes.Buffer
		status := Run(ctx, setup, append([]string{"leat"}, args...), strings.NewReader(""), &stdout, &stderr)
		b.done <- result{status: status, stdout: stdout.String(), stderr: stderr.String()}
	}()
	t.Cleanup(func() { b.stop(t) })
	return b
}

// wait waits for the command to end by itself.
func (b *background) wait(t *testing.T) result {
	t.Helper()
	b.once.Do(func() {
		select {
		case b.res = <-b.done:
		case <-time.After(30 * time.Second):
			b.cancel()
			b.res = <-b.done
			t.Errorf("command did not end within 30s")
		}
	})
	return b.res
}

// stop interrupts the command, as SIGINT does, and waits for it.
func (b *background) stop(t *testing.T) result {
	t.Helper()
	b.cancel()
	return b.wait(t)
}

// ended reports whether the command ended.
func (b *background) ended() bool {
	select {
	case r := <-b.done:
		b.once.Do(func() { b.res = r })
		return true
	default:
		return false
	}
}

// waitUntil polls cond until it holds, failing t after 20s or when the
// command b ends first.
func waitUntil(t *testing.T, b *background, what string, cond func() bool) {
	t.Helper()
	redistest.Eventually(t, 20*time.Second, what, func() bool {
		if b != nil && b.ended() {
			t.Fatalf("command ended while waiting for %s: %+v", what, b.res)
		}
		return cond()
	})
}

func TestWorker(t *testing.T) {
	t.Parallel()
	s := newShop(t)
	ta := &ticksApp{}
	b := start(t, ta.setup, s.quiet("worker", "--prefetch", "7", "--lock-expiry", "3s", "--on-error", "dead-letter",
		"--retries", "2", "--start", "latest", "--worker-id", "w-1", "--leader-lease", "1500ms", "--transient-retry", "off")...)
	a := ta.waitApp(t, b)

	// Flags win over the Setup's defaults, which fill the rest.
	o := a.Executors()[0].Options()
	if o.Prefetch != 7 || o.LockExpiry != 3*time.Second || o.OnError != executor.DeadLetter || o.Retry.Attempts != 2 ||
		o.Start != executor.Latest || o.ReadBlock != 200*time.Millisecond || o.Grace != 2*time.Second || !o.Transient.Off {
		t.Errorf("options %+v", o)
	}
	if cfg := a.Config(); cfg.WorkerID != "w-1" || cfg.LeaderLease != 1500*time.Millisecond {
		t.Errorf("worker ID %q, leader lease %s", cfg.WorkerID, cfg.LeaderLease)
	}
	waitUntil(t, b, "partitions owned", func() bool { return len(a.Executors()[0].Owned()) == 4 })

	// Records sent by the app's own CLI are processed.
	if r := run(t, ta.setup, ticks(50), s.args("sendmany", "ticks", "-")...); r.status != 0 {
		t.Fatalf("sendmany: %+v", r)
	}
	waitUntil(t, b, "50 events processed", func() bool { return ta.tl.count() == 50 })

	r := b.stop(t)
	if r.status != 0 || r.stderr != "" {
		t.Fatalf("stopped worker: %+v", r)
	}
	if r.stdout != "worker w-1 running 1 processor: ticks/count\nworker w-1 stopped\n" {
		t.Errorf("stdout %q", r.stdout)
	}
}

// TestWorkerEnv sets the flags through the environment (so it does not run
// in parallel).
func TestWorkerEnv(t *testing.T) {
	s := newShop(t)
	for k, v := range map[string]string{
		"LEAT_PREFETCH": "9", "LEAT_ON_ERROR": "ignore", "LEAT_RETRIES": "1", "LEAT_LOCK_EXPIRY": "4s",
		"LEAT_READ_BLOCK": "300ms", "LEAT_GRACE": "1s", "LEAT_JOIN_DELAY": "10ms", "LEAT_START": "earliest",
		"LEAT_WORKER_ID": "w-env", "LEAT_LEADER_LEASE": "2s", "LEAT_PROCESSORS": "count", "LEAT_TRANSIENT_RETRY": "45s",
	} {
		t.Setenv(k, v)
	}
	ta := &ticksApp{}
	b := start(t, ta.setup, s.quiet("worker")...)
	a := ta.waitApp(t, b)
	o := a.Executors()[0].Options()
	want := executor.Options{LockExpiry: 4 * time.Second, Prefetch: 9, ReadBlock: 300 * time.Millisecond, Grace: time.Second,
		JoinDelay: 10 * time.Millisecond, Start: executor.Earliest, OnError: executor.Ignore,
		Retry:     executor.Retry{Attempts: 1, Backoff: 100 * time.Millisecond, MaxBackoff: 10 * time.Second},
		Transient: executor.TransientRetry{For: 45 * time.Second, Backoff: 100 * time.Millisecond, MaxBackoff: 5 * time.Second}}
	if o != want {
		t.Errorf("options %+v, want %+v", o, want)
	}
	if cfg := a.Config(); cfg.WorkerID != "w-env" || cfg.LeaderLease != 2*time.Second {
		t.Errorf("worker ID %q, leader lease %s", cfg.WorkerID, cfg.LeaderLease)
	}
	if r := b.stop(t); r.status != 0 {
		t.Errorf("stopped worker: %+v", r)
	}
}

func TestWorkerHalts(t *testing.T) {
	t.Parallel()
	s := newShop(t)
	ta := &ticksApp{fail: "k3"}
	b := start(t, ta.setup, s.quiet("worker", "--worker-id", "w-halt")...)
	ta.waitApp(t, b)
	if r := run(t, ta.setup, ticks(10), s.args("sendmany", "ticks", "-")...); r.status != 0 {
		t.Fatalf("sendmany: %+v", r)
	}
	r := b.wait(t)
	wantFailure(t, r, exitFailure, "worker w-halt stopped", `processor "count"`, "cannot count k3")
	// The failing event stays pending, to be delivered again after a restart.
	key := s.keys.Partition("ticks", stream.PartitionOf([]byte("k3"), 4))
	if p, err := s.client.XPending(context.Background(), key, "count").Result(); err != nil || p.Count == 0 {
		t.Errorf("pending of the failing partition: %+v, %v", p, err)
	}
}

func TestWorkerSelect(t *testing.T) {
	t.Parallel()
	s := newShop(t)
	var built atomic.Pointer[app.App]
	setup := func(cfg app.Config) (*app.App, error) {
		a, err := app.New(cfg)
		if err != nil {
			return nil, err
		}
		fn := func(ctx context.Context, events *stream.Events[tick]) error {
			for range events.All() {
			}
			return nil
		}
		for _, name := range []string{"ticks", "tocks"} {
			st, err := stream.Declare[tick](a, name, stream.KeyField("key"), stream.Partitions(2))
			if err != nil {
				return nil, err
			}
			for _, p := range []string{"count", "sum-" + name} {
				if err := app.Process(a, st, p, fn); err != nil {
					return nil, err
				}
			}
		}
		built.CompareAndSwap(nil, a)
		return a, nil
	}

	r := run(t, setup, "", s.args("worker", "--processors", "count")...)
	wantFailure(t, r, exitUsage, `processor name "count" is ambiguous`, "ticks/count, tocks/count")
	r = run(t, setup, "", s.args("worker", "--processors", "ticks/nope")...)
	wantFailure(t, r, exitUsage, `unknown processor "ticks/nope"`, "known: ticks/count, ticks/sum-ticks, tocks/count, tocks/sum-tocks")

	built.Store(nil)
	b := start(t, setup, s.quiet("worker", "--read-block", "100ms", "--processors", "tocks/count, sum-ticks")...)
	waitUntil(t, b, "the worker's executors", func() bool { a := built.Load(); return a != nil && len(a.Executors()) > 0 })
	execs := built.Load().Executors()
	if len(execs) != 2 {
		t.Fatalf("%d executors, want 2", len(execs))
	}
	waitUntil(t, b, "partitions owned", func() bool { return len(execs[0].Owned()) == 2 && len(execs[1].Owned()) == 2 })
	r = b.stop(t)
	if r.status != 0 || !strings.HasPrefix(r.stdout, "worker ") || !strings.Contains(r.stdout, " running 2 processors: tocks/count, ticks/sum-ticks\n") {
		t.Errorf("stopped worker: %+v", r)
	}
}

func TestWorkerUsageErrors(t *testing.T) {
	t.Parallel()
	s := newShop(t)
	ta := &ticksApp{}
	noProcessors := func(cfg app.Config) (*app.App, error) { return app.New(cfg) }
	for _, tc := range []struct {
		name  string
		setup Setup
		args  []string
		want  []string
	}{
		{"standalone", nil, s.args("worker"), []string{"worker needs a program that registers processors", "cmd.Main(setup)"}},
		{"standalone without app", nil, []string{"worker"}, []string{"worker needs a program that registers processors"}},
		{"no processors", noProcessors, s.args("worker"), []string{`app "shop" registers no processors`}},
		{"bad policy", ta.setup, s.args("worker", "--on-error", "explode"), []string{`--on-error: unknown failure policy "explode"`}},
		{"bad start", ta.setup, s.args("worker", "--start", "middle"), []string{`--start: unknown start position "middle"`}},
		{"short lock expiry", ta.setup, s.args("worker", "--lock-expiry", "100ms"), []string{"--lock-expiry: lock expiry 100ms is below 300ms"}},
		{"negative prefetch", ta.setup, s.args("worker", "--prefetch", "-1"), []string{"--prefetch: prefetch -1 must be at least 1"}},
		{"negative grace", ta.setup, s.args("worker", "--grace", "-1s"), []string{"--grace: grace period -1s is negative"}},
		{"negative retries", ta.setup, s.args("worker", "--retries", "-2"), []string{"--retries: retries -2: want 0 or more"}},
		{"zero transient retry", ta.setup, s.args("worker", "--transient-retry", "0"), []string{`--transient-retry: "0": want a positive duration such as 30s or 2m, or off`}},
		{"bad transient retry", ta.setup, s.args("worker", "--transient-retry", "never"), []string{`--transient-retry: "never"`}},
		{"short lease", ta.setup, s.args("worker", "--leader-lease", "10ms"), []string{"--leader-lease:", "leader lease 10ms is below 300ms"}},
		{"two errors", ta.setup, s.args("worker", "--on-error", "x", "--start", "y"), []string{"--on-error", "--start"}},
		{"bad duration", ta.setup, s.args("worker", "--grace", "soon"), []string{"worker: invalid value"}},
		{"arguments", ta.setup, s.args("worker", "ticks"), []string{"worker: want no arguments, got 1"}},
		{"unknown processor", ta.setup, s.args("worker", "--processors", "nope"), []string{`unknown processor "nope" (known: ticks/count)`}},
		{"bad processor name", ta.setup, s.args("worker", "--processors", "a:b"), []string{`processor name "a:b" is invalid`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := run(t, tc.setup, "", tc.args...)
			wantFailure(t, r, exitUsage, tc.want...)
		})
	}
}

func TestWorkerAndResetHelp(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{{"worker", "--help"}, {"reset", "-h"}} {
		r := run(t, nil, "", args...)
		if r.status != 0 || r.stderr != "" || !strings.Contains(r.stdout, "USAGE:") || !strings.Contains(r.stdout, "--") {
			t.Errorf("%q: status %d, stdout %q, stderr %q", args, r.status, r.stdout, r.stderr)
		}
	}
	r := run(t, nil, "", "worker", "--help")
	for _, flag := range []string{"--lock-expiry", "LEAT_LOCK_EXPIRY", "--prefetch", "--read-block", "--grace", "--join-delay",
		"--start", "--on-error", "--retries", "LEAT_RETRIES", "--transient-retry", "LEAT_TRANSIENT_RETRY", "--worker-id", "--leader-lease", "LEAT_LEADER_LEASE", "--processors"} {
		if !strings.Contains(r.stdout, flag) {
			t.Errorf("worker help does not mention %s", flag)
		}
	}
}
