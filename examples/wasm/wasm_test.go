// Package wasmexample holds the test of the WebAssembly handler examples:
// the standalone leat binary builds them, stores them in Redis, and two
// worker processes per queue run their tasks in a sandbox.
package wasmexample

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/leatdev/leat/app"
	"github.com/leatdev/leat/internal/tools/redistest"
	"github.com/leatdev/leat/task"
)

func TestMain(m *testing.M) { redistest.Main(m) }

// TestTwoWorkerProcesses builds both examples with "leat wasm build",
// stores them with "leat wasm put", and runs 1,000 tasks (500 a queue) on
// two "leat worker --wasm" processes per queue: every task succeeds with
// its word count, and the modules' stderr lines are in the tasks' logs.
func TestTwoWorkerProcesses(t *testing.T) {
	const perQueue = 500
	c, prefix := redistest.Client(t)
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	dir := t.TempDir()
	bin := filepath.Join(dir, "leat")
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/leatdev/leat/cmd/leat").CombinedOutput(); err != nil {
		t.Fatalf("build leat: %v\n%s", err, out)
	}
	leat := func(args ...string) string {
		t.Helper()
		all := append([]string{"--redis", redistest.URL(t), "--prefix", prefix, "--app", "words"}, args...)
		out, err := exec.CommandContext(ctx, bin, all...).CombinedOutput()
		if err != nil {
			t.Fatalf("leat %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	cache := filepath.Join(dir, "cache")
	for _, name := range []string{"lines", "reactor"} {
		module := filepath.Join(dir, name+".wasm")
		leat("wasm", "build", "-o", module, "./"+name)
		out := leat("wasm", "put", "--reusable", "--cache-dir", cache, name, module)
		if !strings.HasPrefix(out, name+" version 1: "+name+" module") {
			t.Fatalf("put %s: %s", name, out)
		}
	}
	if out := leat("wasm", "list"); !strings.Contains(out, "lines") || !strings.Contains(out, "reactor") {
		t.Fatalf("list: %s", out)
	}

	a, err := app.New(app.Config{Name: "words", Client: c, KeyPrefix: prefix, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	queues := map[string]*task.Queue[json.RawMessage, json.RawMessage]{}
	ids := map[string][]string{}
	for _, name := range []string{"lines", "reactor"} {
		q, err := task.Declare[json.RawMessage, json.RawMessage](a, "wasm-"+name, task.Concurrency(10))
		if err != nil {
			t.Fatal(err)
		}
		payloads := make([]json.RawMessage, perQueue)
		for i := range payloads {
			payloads[i], _ = json.Marshal(map[string]string{"text": strings.Repeat("w ", i%7)})
		}
		if ids[name], err = q.EnqueueMany(ctx, payloads); err != nil {
			t.Fatal(err)
		}
		queues[name] = q
	}

	var workers []*exec.Cmd
	var outs []*bytes.Buffer
	for _, name := range []string{"lines", "reactor"} {
		for i := range 2 {
			cmd := exec.Command(bin, "--redis", redistest.URL(t), "--prefix", prefix, "--app", "words", "--log-level", "warn",
				"worker", "--queue", "wasm-"+name, "--wasm", name, "--wasm-pool", "--wasm-cache-dir", cache,
				"--worker-id", fmt.Sprintf("%s%d", name, i+1))
			var out bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &out
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			workers, outs = append(workers, cmd), append(outs, &out)
			t.Cleanup(func() { _ = cmd.Process.Kill() })
		}
	}
	for _, name := range []string{"lines", "reactor"} {
		byWorker := map[string]int{}
		for i, id := range ids[name] {
			in, err := queues[name].Wait(ctx, id)
			if err != nil {
				t.Fatalf("%s task %d: %v", name, i, err)
			}
			want := fmt.Sprintf(`{"words":%d}`, i%7)
			if in.State != task.Succeeded || string(in.Result) != want {
				t.Fatalf("%s task %d: %s %s %q, want %s", name, i, in.State, in.Result, in.Error, want)
			}
			byWorker[in.Worker]++
		}
		t.Logf("%s: tasks per worker: %v", name, byWorker)
		if out := leat("tasks", "logs", ids[name][3]); !strings.Contains(out, "counting") {
			t.Errorf("%s: the task's log: %q", name, out)
		}
	}
	for i, cmd := range workers {
		_ = cmd.Process.Signal(syscall.SIGINT)
		if err := cmd.Wait(); err != nil {
			t.Errorf("worker %d: %v\n%s", i, err, outs[i])
		}
	}
}

// TestConfigFile runs the folder's leat.yaml as its README says, with the
// standalone binary alone: build and put both modules, apply the file,
// start one "leat worker --config" for both queues, and enqueue and wait
// through the CLI.
func TestConfigFile(t *testing.T) {
	_, prefix := redistest.Client(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	dir := t.TempDir()
	bin := filepath.Join(dir, "leat")
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/leatdev/leat/cmd/leat").CombinedOutput(); err != nil {
		t.Fatalf("build leat: %v\n%s", err, out)
	}
	global := []string{"--redis", redistest.URL(t), "--prefix", prefix}
	leat := func(args ...string) string {
		t.Helper()
		out, err := exec.CommandContext(ctx, bin, append(append([]string{}, global...), args...)...).Output()
		if err != nil {
			t.Fatalf("leat %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return strings.TrimSpace(string(out))
	}
	cache := filepath.Join(dir, "cache")
	for _, name := range []string{"lines", "reactor"} {
		module := filepath.Join(dir, name+".wasm")
		leat("wasm", "build", "-o", module, "./"+name)
		leat("--app", "words", "wasm", "put", "--reusable", "--cache-dir", cache, name, module)
	}
	if out := leat("apply", "-f", "leat.yaml"); !strings.Contains(out, "wasm-lines") || !strings.Contains(out, "wasm-reactor") {
		t.Fatalf("apply: %s", out)
	}
	worker := exec.Command(bin, append(append([]string{}, global...), "--log-level", "warn",
		"worker", "--config", "leat.yaml", "--wasm-cache-dir", cache)...)
	var out bytes.Buffer
	worker.Stdout, worker.Stderr = &out, &out
	if err := worker.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = worker.Process.Kill() })
	for _, queue := range []string{"wasm-lines", "wasm-reactor"} {
		id := leat("enqueue", queue, `{"text":"a b a"}`)
		if got := leat("tasks", "wait", id); got != `{"words":3}` {
			t.Fatalf("%s: result %q\nworker: %s", queue, got, out.String())
		}
	}
	_ = worker.Process.Signal(syscall.SIGINT)
	if err := worker.Wait(); err != nil {
		t.Fatalf("worker: %v\n%s", err, out.String())
	}
	if s := out.String(); !strings.Contains(s, "wasm-lines with wasm module lines version 1") || !strings.Contains(s, "wasm-reactor with wasm module reactor version 1") {
		t.Errorf("worker's start line: %s", s)
	}
}
