package cmd

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/leatdev/leat/app"
	"github.com/leatdev/leat/task"
)

const pyHandler = "python3 ../examples/tasks-python/handler.py"

func needPython(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("python3 is not installed (scripts/test installs it)")
	}
}

// TestWorkerExec: the standalone binary runs a queue declared by another
// program with a Python handler, and "tasks follow" prints a task's
// progress and partial results in order, then its result.
func TestWorkerExec(t *testing.T) {
	t.Parallel()
	needPython(t)
	s := newShop(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	a, err := app.New(app.Config{Name: "shop", Client: s.client, KeyPrefix: s.keys.Prefix,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	q, err := task.Declare[json.RawMessage, json.RawMessage](a, "words", task.Concurrency(3))
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, p := range []string{`{"text":"a b c","report":true}`, `{"text":"x"}`, `{"nope":1}`} {
		id, err := q.Enqueue(ctx, json.RawMessage(p), task.WithMaxRetries(0))
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	w := start(t, nil, s.quiet("worker", "--queue", "words", "--exec", pyHandler, "--grace", "1s")...)
	r := run(t, nil, "", s.quiet("tasks", "follow", ids[0])...)
	want := `progress {"done":1,"of":3}
partial {"word":"a"}
progress {"done":2,"of":3}
partial {"word":"b"}
progress {"done":3,"of":3}
partial {"word":"c"}
result {"words":3,"counts":{"a":1,"b":1,"c":1}}
`
	if r.status != 0 || r.stdout != want {
		t.Fatalf("follow: %+v", r)
	}
	if raw, err := q.Result(ctx, ids[1]); err != nil || string(raw) != `{"words":1,"counts":{"x":1}}` {
		t.Fatalf("%s, %v", raw, err)
	}
	r = run(t, nil, "", s.quiet("tasks", "follow", ids[2])...)
	if r.status != 1 || !strings.Contains(r.stderr, "payload needs a text") {
		t.Fatalf("follow of a failed task: %+v", r)
	}
	in, err := q.Info(ctx, ids[0])
	if err != nil || string(in.Progress) != `{"done":3,"of":3}` {
		t.Fatalf("%+v, %v", in, err)
	}
	res := w.stop(t)
	if res.status != 0 || !strings.Contains(res.stdout, "running task queue words with: "+pyHandler) {
		t.Fatalf("worker: %+v", res)
	}
}

func TestWorkerExecUsage(t *testing.T) {
	t.Parallel()
	s := newShop(t)
	r := run(t, nil, "", s.quiet("worker", "--queue", "nope", "--exec", "true")...)
	wantFailure(t, r, 2, `unknown queue "nope" in the registry of app "shop" (it has none;`)
	r = run(t, nil, "", s.quiet("worker", "--exec", "true")...)
	wantFailure(t, r, 2, "--queue")
	r = run(t, nil, "", s.quiet("worker", "--queue", "q")...)
	wantFailure(t, r, 2, "--exec")
}

// TestWorkerExecTestInput: --test-input runs the handler once, without
// Redis.
func TestWorkerExecTestInput(t *testing.T) {
	t.Parallel()
	needPython(t)
	r := run(t, nil, "", "--redis", "redis://127.0.0.1:1", "worker", "--exec", pyHandler,
		"--test-input", `{"text":"to be","report":true}`)
	want := `progress {"done":1,"of":2}
partial {"word":"to"}
progress {"done":2,"of":2}
partial {"word":"be"}
result {"words":2,"counts":{"to":1,"be":1}}
`
	// The handler's stderr line is logged with its task.
	if r.status != 0 || r.stdout != want || !strings.Contains(r.stderr, "counted 2 words") || !strings.Contains(r.stderr, "task=local") {
		t.Fatalf("%+v", r)
	}
	r = run(t, nil, "", "worker", "--exec", pyHandler, "--test-input", `{"nope":1}`)
	wantFailure(t, r, 1, "payload needs a text")
	r = run(t, nil, "", "worker", "--exec", pyHandler, "--test-input", `{nope`)
	wantFailure(t, r, 2, "not JSON")
}

// TestWorkerExecTestInputStartFailure: --test-input runs a handler that
// does not start once, without restarting it, and exits 1 with the reason
// and the handler's last stderr lines.
func TestWorkerExecTestInputStartFailure(t *testing.T) {
	t.Parallel()
	needPython(t)
	r := run(t, nil, "", "--redis", "redis://127.0.0.1:1", "worker", "--exec",
		`python3 -c 'import sys; print("no module named torch", file=sys.stderr); sys.exit(3)'`, "--test-input", `{}`)
	if r.status != 1 || !strings.Contains(r.stderr, "no module named torch") || strings.Count(r.stderr, "exited before its ready line") != 2 ||
		strings.Contains(r.stderr, "restart") {
		t.Fatalf("want exit status 1 after one start, its failure logged and returned with the handler's stderr: %+v", r)
	}
	// A shell, not Python, that never says ready: it writes to stderr well
	// within the start timeout however loaded the machine is.
	r = run(t, nil, "", "--redis", "redis://127.0.0.1:1", "worker", "--start-timeout", "4s", "--exec",
		`/bin/sh -c 'echo loading >&2; exec sleep 60'`, "--test-input", `{}`)
	if r.status != 1 || !strings.Contains(r.stderr, "loading") || strings.Count(r.stderr, "no ready line within 4s") != 2 ||
		!strings.Contains(r.stderr, "flush") || strings.Contains(r.stderr, "restart") {
		t.Fatalf("want exit status 1 after one start, its failure logged and returned with the handler's stderr: %+v", r)
	}
}

// TestWorkerExecEnv: a handler gets none of leat's LEAT_ variables, nor the
// worker's others but the allowed ones, and those --env passes on or sets
// (a value with a comma whole); --env-all passes on all but LEAT_ ones.
// (Not parallel: it changes the environment.)
func TestWorkerExecEnv(t *testing.T) {
	needPython(t)
	t.Setenv("LEAT_SERVE_TOKEN", "s3cret")
	t.Setenv("LEAT_REDIS_URL", "redis://:hunter2@127.0.0.1:1")
	t.Setenv("DB_PASSWORD", "pw")
	t.Setenv("OTHER", "o")
	handler := `python3 -c 'import json, os, sys
print(json.dumps({"status": "ready"}), flush=True)
for line in sys.stdin:
    print(json.dumps({"task_id": json.loads(line)["task_id"], "result": dict(os.environ)}), flush=True)'`
	envOf := func(args ...string) map[string]string {
		t.Helper()
		r := run(t, nil, "", append([]string{"worker", "--exec", handler, "--test-input", "{}"}, args...)...)
		var env map[string]string
		if r.status != 0 || json.Unmarshal([]byte(strings.TrimPrefix(r.stdout, "result ")), &env) != nil {
			t.Fatalf("%+v", r)
		}
		for k, v := range env {
			// (LEAT_EXEC_PROCESS is the marker of the handler's processes.)
			if strings.HasPrefix(k, "LEAT_") && k != "LEAT_MODE" && k != "LEAT_EXEC_PROCESS" {
				t.Errorf("%s=%s reached the handler", k, v)
			}
		}
		return env
	}
	if env := envOf(); env["DB_PASSWORD"] != "" || env["OTHER"] != "" || env["PATH"] == "" {
		t.Errorf("default environment %v", env)
	}
	if env := envOf("--env", "DB_PASSWORD", "--env", "MODES=a,b", "--env", "LEAT_MODE=x"); env["DB_PASSWORD"] != "pw" ||
		env["MODES"] != "a,b" || env["LEAT_MODE"] != "x" || env["OTHER"] != "" {
		t.Errorf("with --env: %v", env)
	}
	if env := envOf("--env-all"); env["DB_PASSWORD"] != "pw" || env["OTHER"] != "o" {
		t.Errorf("with --env-all: %v", env)
	}
	r := run(t, nil, "", "worker", "--exec", handler, "--test-input", "{}", "--env", "LEAT_SERVE_TOKEN")
	if r.status != 2 || !strings.Contains(r.stderr, "not passed on") {
		t.Errorf("--env LEAT_SERVE_TOKEN: %+v", r)
	}
}
