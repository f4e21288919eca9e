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
	"github.com/leatdev/leat/task"
)

// pidHandler answers each task with its process's ID.
const pidHandler = `import json, os, sys
print(json.dumps({"status": "ready"}), flush=True)
for line in sys.stdin:
    print(json.dumps({"task_id": json.loads(line)["task_id"], "result": os.getpid()}), flush=True)
`

// TestWorkerExecMaxTasksPerProcess: --max-tasks-per-process 2 runs 6 tasks,
// one at a time, on 3 processes; as does a file's max_tasks_per_process.
// A negative count is refused, from the flag and from the file.
func TestWorkerExecMaxTasksPerProcess(t *testing.T) {
	t.Parallel()
	needPython(t)
	s := newShop(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	a, err := app.New(app.Config{Name: "shop", Client: s.client, KeyPrefix: s.keys.Prefix,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	q, err := task.Declare[json.RawMessage, json.RawMessage](a, "pids", task.Concurrency(1))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	script := filepath.Join(dir, "pid.py")
	if err := os.WriteFile(script, []byte(pidHandler), 0o600); err != nil {
		t.Fatal(err)
	}
	// processes runs 6 tasks and returns how many each process ran.
	processes := func() map[int]int {
		ran := map[int]int{}
		for range 6 {
			id, err := q.Enqueue(ctx, json.RawMessage(`{}`))
			if err != nil {
				t.Fatal(err)
			}
			raw, err := q.Result(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			var pid int
			if err := json.Unmarshal(raw, &pid); err != nil {
				t.Fatalf("result %s: %v", raw, err)
			}
			ran[pid]++
		}
		return ran
	}
	w := start(t, nil, s.quiet("worker", "--queue", "pids", "--exec", "python3 "+script, "--max-tasks-per-process", "2", "--grace", "1s")...)
	if ran := processes(); len(ran) != 3 {
		t.Fatalf("--max-tasks-per-process 2: tasks per process %v, want 3 processes", ran)
	}
	if r := w.stop(t); r.status != 0 {
		t.Fatalf("worker: %+v", r)
	}

	file := writeFile(t, "queues:\n  pids:\n    concurrency: 1\n    handler:\n      exec:\n        command: python3 "+script+"\n        max_tasks_per_process: 2\n")
	w = start(t, nil, s.quiet("worker", "--config", file, "--grace", "1s")...)
	if ran := processes(); len(ran) != 3 {
		t.Fatalf("max_tasks_per_process: 2: tasks per process %v, want 3 processes", ran)
	}
	if r := w.stop(t); r.status != 0 {
		t.Fatalf("worker: %+v", r)
	}

	wantFailure(t, run(t, nil, "", s.quiet("worker", "--queue", "pids", "--exec", "true", "--max-tasks-per-process", "-1")...), exitUsage,
		"max tasks per process -1")
	bad := writeFile(t, "queues:\n  pids:\n    handler:\n      exec: {command: x, max_tasks_per_process: -1}\n")
	r := run(t, nil, "", s.quiet("worker", "--config", bad)...)
	if r.status != exitUsage || !strings.Contains(r.stderr, ":4: queues.pids.handler.exec.max_tasks_per_process: must be an integer 0..1000000000, got -1") {
		t.Fatalf("%+v", r)
	}
}
