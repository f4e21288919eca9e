package cmd

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/leatdev/leat/app"
	"github.com/leatdev/leat/internal/tools/redistest"
	"github.com/leatdev/leat/task"
)

// writeFile writes a configuration file and returns its path.
func writeFile(t *testing.T, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "leat.yaml")
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// registryOf returns every entry of the app's two registries.
func registryOf(t *testing.T, s shop) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, k := range []string{s.keys.Registry(), s.keys.TaskQueues()} {
		m, err := s.client.HGetAll(context.Background(), k).Result()
		if err != nil {
			t.Fatal(err)
		}
		for f, v := range m {
			out[k+" "+f] = v
		}
	}
	return out
}

const applyBase = `app: shop
streams:
  orders:
    partitions: 8
    key: customer
queues:
  inference:
    retries: 3
    levels: [premium, standard, default]
`

// TestApplyCLI: leat apply checks the whole file first and writes nothing
// on a mistake (three mistakes, three lines); --dry-run prints the plan and
// writes nothing; apply writes; a partition count change is refused with
// why, the registry unchanged; config export round-trips as no changes.
func TestApplyCLI(t *testing.T) {
	t.Parallel()
	s := newShop(t)

	bad := writeFile(t, "app: shop\nqueues:\n  words:\n    retries: \"3x\"\n    concurrency: 8.5\n    timeout: 30\n")
	r := run(t, nil, "", s.args("apply", "-f", bad)...)
	if r.status != exitUsage || r.stdout != "" {
		t.Fatalf("status %d, stdout %q, stderr %q", r.status, r.stdout, r.stderr)
	}
	want := "leat: 3 errors in " + bad + " (nothing was done):\n" +
		bad + `:4: queues.words.retries: must be an integer 0..10000, got "3x"` + "\n" +
		bad + ":5: queues.words.concurrency: must be an integer 1..2147483647, got 8.5\n" +
		bad + `:6: queues.words.timeout: must be a duration such as "30s" or "1h30m", more than 0 and at most 7d (168h0m0s) (a string), got 30` + "\n"
	if r.stderr != want {
		t.Fatalf("stderr:\n%s\nwant:\n%s", r.stderr, want)
	}
	if reg := registryOf(t, s); len(reg) != 0 {
		t.Fatalf("registry after a bad file: %v", reg)
	}

	good := writeFile(t, applyBase)
	r = run(t, nil, "", s.args("apply", "-f", good, "--dry-run")...)
	if r.status != 0 || !strings.Contains(r.stdout, "stream orders: added\n  partitions: 8\n  key: customer\n") ||
		!strings.HasSuffix(r.stdout, "2 added, 0 changed, 0 unchanged\ndry run: nothing was written\n") {
		t.Fatalf("dry run: %+v", r)
	}
	if reg := registryOf(t, s); len(reg) != 0 {
		t.Fatalf("registry after a dry run: %v", reg)
	}
	if r = run(t, nil, "", s.args("apply", "-f", good)...); r.status != 0 || !strings.HasSuffix(r.stdout, "applied to app shop\n") {
		t.Fatalf("apply: %+v", r)
	}
	before := registryOf(t, s)
	if len(before) != 2 {
		t.Fatalf("registry: %v", before)
	}

	changed := writeFile(t, strings.Replace(strings.Replace(applyBase, "partitions: 8", "partitions: 16", 1), "retries: 3", "retries: 5", 1))
	r = run(t, nil, "", s.args("apply", "-f", changed)...)
	if r.status != exitUsage || !strings.Contains(r.stdout, "queue inference: changed\n  retries: 3 -> 5\n") ||
		!strings.Contains(r.stderr, "leat: 1 error in "+changed+" (refused; nothing was written):\n"+changed+
			":4: streams.orders.partitions: the registry has 8 partitions, the file 16: refused: its entries are in Redis already, "+
			"and a key's new records would go to another partition than its old ones, breaking per-key order") {
		t.Fatalf("partition change: %+v", r)
	}
	if after := registryOf(t, s); len(after) != len(before) || after[s.keys.TaskQueues()+" inference"] != before[s.keys.TaskQueues()+" inference"] {
		t.Fatalf("registry changed by a refused apply:\n%v\n%v", before, after)
	}

	r = run(t, nil, "", s.args("config", "export")...)
	if r.status != 0 || !strings.Contains(r.stdout, "app: shop\n") || !strings.Contains(r.stdout, "levels: [premium, standard, default]") {
		t.Fatalf("export: %+v", r)
	}
	exported := writeFile(t, r.stdout)
	if r = run(t, nil, "", s.args("apply", "-f", exported, "--dry-run")...); r.status != 0 ||
		!strings.HasSuffix(r.stdout, "0 added, 0 changed, 2 unchanged\ndry run: nothing was written\n") {
		t.Fatalf("the export applied: %+v", r)
	}

	other := writeFile(t, "app: other\n")
	wantFailure(t, run(t, nil, "", s.args("apply", "-f", other)...), exitUsage, `is for app "other", --app (or LEAT_APP) names "shop"`)
	wantFailure(t, run(t, nil, "", s.args("apply")...), exitUsage, "apply needs -f FILE")
}

// TestEnqueueLevels: leat enqueue QUEUE.LEVEL enqueues at that level; an
// unknown level names the queue's levels; a bare queue is its default
// level.
func TestEnqueueLevels(t *testing.T) {
	t.Parallel()
	s := newShop(t)
	if r := run(t, nil, "", s.args("apply", "-f", writeFile(t, applyBase))...); r.status != 0 {
		t.Fatalf("apply: %+v", r)
	}
	for addr, level := range map[string]string{"inference.premium": "premium", "inference.standard": "standard", "inference": "default"} {
		r := run(t, nil, "", s.args("enqueue", addr, `{"n":1}`)...)
		if r.status != 0 {
			t.Fatalf("enqueue %s: %+v", addr, r)
		}
		id := strings.TrimSpace(r.stdout)
		r = run(t, nil, "", s.args("tasks", "show", "--json", id)...)
		var in task.Info
		if err := json.Unmarshal([]byte(r.stdout), &in); err != nil || in.Priority != level {
			t.Fatalf("%s: %+v (%v)", addr, r, err)
		}
	}
	wantFailure(t, run(t, nil, "", s.args("enqueue", "inference.gold", "{}")...), exitUsage,
		`unknown priority level "gold" of task queue "inference" (levels: premium, standard, default)`)
	wantFailure(t, run(t, nil, "", s.args("enqueue", "--priority", "standard", "inference.premium", "{}")...), exitUsage,
		`inference.premium names level "premium" of queue inference, --priority "standard" another`)
	wantFailure(t, run(t, nil, "", s.args("enqueue", "nothing.premium", "{}")...), exitUsage, `unknown queue "nothing.premium"`)
}

// TestEnqueueToDeclaredQueue: leat enqueue finds a queue that a running
// program only declared (task.Declare), before it enqueued anything.
func TestEnqueueToDeclaredQueue(t *testing.T) {
	t.Parallel()
	s := newShop(t)
	a, err := app.New(app.Config{Name: "shop", Client: s.client, KeyPrefix: s.keys.Prefix, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := task.Declare[json.RawMessage, json.RawMessage](a, "reports", task.MaxRetries(2)); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = a.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	redistest.Eventually(t, 10*time.Second, "the declared queue registered", func() bool {
		return s.client.HExists(context.Background(), s.keys.TaskQueues(), "reports").Val()
	})
	r := run(t, nil, "", s.args("enqueue", "reports", `{"day":"monday"}`)...)
	if r.status != 0 {
		t.Fatalf("enqueue: %+v", r)
	}
	r = run(t, nil, "", s.args("tasks", "show", "--json", strings.TrimSpace(r.stdout))...)
	var in task.Info
	if err := json.Unmarshal([]byte(r.stdout), &in); err != nil || in.MaxRetries != 2 {
		t.Fatalf("task: %+v (%v)", r, err)
	}
}

// TestWorkerConfigRefuses: leat worker --config refuses what it cannot
// run, before connecting.
func TestWorkerConfigRefuses(t *testing.T) {
	t.Parallel()
	s := newShop(t)
	noHandler := writeFile(t, applyBase)
	wantFailure(t, run(t, nil, "", s.args("worker", "--config", noHandler)...), exitUsage, "gives no task queue a handler")
	wantFailure(t, run(t, nil, "", s.args("worker", "--config", noHandler, "--queue", "inference")...), exitUsage,
		`gives task queue "inference" no handler`)
	wantFailure(t, run(t, nil, "", s.args("worker", "--config", noHandler, "--queue", "nothing")...), exitUsage, `has no task queue "nothing"`)
	wantFailure(t, run(t, nil, "", s.args("worker", "--config", noHandler, "--exec", "true")...), exitUsage, "--exec needs --queue")
	wasmFile := writeFile(t, "queues:\n  q:\n    handler:\n      wasm: nosuchmodule\n")
	wantFailure(t, run(t, nil, "", s.args("worker", "--config", wasmFile, "--queue", "q", "--exec", "true")...), exitUsage,
		`runs task queue "q" with a wasm module: --exec replaces exec commands only`)
	wantFailure(t, run(t, nil, "", s.args("worker", "--config", wasmFile, "--wasm-cache-dir", "-")...), exitUsage,
		"queue q:", "leat wasm put nosuchmodule FILE")
	bad := writeFile(t, "queues:\n  q:\n    handler:\n      exec:\n        command: x\n        env: [LEAT_REDIS_URL]\n")
	r := run(t, nil, "", s.args("worker", "--config", bad)...)
	if r.status != exitUsage || !strings.Contains(r.stderr, ":6: queues.q.handler.exec.env[0]: LEAT_REDIS_URL: leat's own variables are not passed on") {
		t.Fatalf("%+v", r)
	}
}
