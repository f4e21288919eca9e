package cmd

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/leatdev/leat/app"
	"github.com/leatdev/leat/internal/tools/redistest"
	"github.com/leatdev/leat/internal/tools/wasmtest"
	"github.com/leatdev/leat/task"
)

// TestWasmRegistry: put refuses bad modules with a clear error and
// stores nothing; list, show and rm show and remove what put stored.
func TestWasmRegistry(t *testing.T) {
	t.Parallel()
	s := newShop(t)
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.wasm")
	if err := os.WriteFile(bad, wasmtest.NoExecute(), 0o644); err != nil {
		t.Fatal(err)
	}
	cache := filepath.Join(dir, "cache")
	r := run(t, nil, "", s.args("wasm", "put", "--contract", "reactor", "--cache-dir", cache, "bad", bad)...)
	if r.status != 1 || !strings.Contains(r.stderr, "no function execute exported") {
		t.Fatalf("put without execute: %+v", r)
	}
	r = run(t, nil, "", s.args("wasm", "put", "--max-size", "10", "bad", bad)...)
	if r.status != 1 || !strings.Contains(r.stderr, "over the limit of 10 bytes") {
		t.Fatalf("put over the size limit: %+v", r)
	}
	r = run(t, nil, "", s.args("wasm", "put", "--contract", "wat", "bad", bad)...)
	if r.status != 2 || !strings.Contains(r.stderr, `unknown contract "wat"`) {
		t.Fatalf("put with a bad contract: %+v", r)
	}
	if r := run(t, nil, "", s.args("wasm", "list")...); r.status != 0 || strings.Contains(r.stdout, "bad") {
		t.Fatalf("list after the refusals: %+v", r)
	}

	// A tiny module: a Go-built one takes a minute to compile under the
	// race detector.
	module := filepath.Join(dir, "words.wasm")
	if err := os.WriteFile(module, wasmtest.Constant(`{"result": 1}`), 0o644); err != nil {
		t.Fatal(err)
	}
	r = run(t, nil, "", s.args("wasm", "put", "--cache-dir", cache, "words", module)...)
	if r.status != 0 || !strings.HasPrefix(r.stdout, "words version 1: reactor module of ") {
		t.Fatalf("put: %+v", r)
	}
	r = run(t, nil, "", s.args("wasm", "put", "--reusable", "--cache-dir", cache, "words", module)...)
	if r.status != 0 || !strings.HasPrefix(r.stdout, "words version 2: reactor module of ") {
		t.Fatalf("put reusable: %+v", r)
	}
	r = run(t, nil, "", s.args("wasm", "show", "--json", "words")...)
	var versions []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(r.stdout), "\n") {
		var v map[string]any
		if err := json.Unmarshal([]byte(line), &v); err != nil {
			t.Fatalf("show: %v: %+v", err, r)
		}
		versions = append(versions, v)
	}
	if len(versions) != 2 || versions[1]["version"] != 2.0 || versions[1]["reusable"] != true || versions[0]["contract"] != "reactor" {
		t.Fatalf("show: %v", versions)
	}
	if r := run(t, nil, "", s.args("wasm", "list")...); r.status != 0 || !strings.Contains(r.stdout, "words  2        reactor   true") {
		t.Fatalf("list: %+v", r)
	}
	if r := run(t, nil, "", s.args("wasm", "rm", "words")...); r.status != 0 || r.stdout != "removed words: 2 versions\n" {
		t.Fatalf("rm: %+v", r)
	}
	if r := run(t, nil, "", s.args("wasm", "show", "words")...); r.status != 1 || !strings.Contains(r.stderr, "no module of that name") {
		t.Fatalf("show after rm: %+v", r)
	}
}

// TestWasmWorker: "leat worker --wasm" runs a queue's tasks with a module
// of the registry, and refuses a module it does not hold.
func TestWasmWorker(t *testing.T) {
	t.Parallel()
	s := newShop(t)
	cache := filepath.Join(t.TempDir(), "cache")
	r := run(t, nil, "", s.quiet("worker", "--queue", "words", "--wasm", "words", "--wasm-cache-dir", cache)...)
	if r.status != 2 || !strings.Contains(r.stderr, "leat wasm put words FILE") {
		t.Fatalf("worker of a module not stored: %+v", r)
	}
	r = run(t, nil, "", s.quiet("worker", "--queue", "words", "--wasm", "words", "--exec", "cat")...)
	if r.status != 2 || !strings.Contains(r.stderr, "give one handler") {
		t.Fatalf("worker with --wasm and --exec: %+v", r)
	}
	module := filepath.Join(t.TempDir(), "words.wasm")
	if err := os.WriteFile(module, wasmtest.Constant(`{"result": {"words": 3}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if r := run(t, nil, "", s.args("wasm", "put", "--cache-dir", cache, "words", module)...); r.status != 0 {
		t.Fatalf("put: %+v", r)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	a, err := app.New(app.Config{Name: "shop", Client: s.client, KeyPrefix: s.keys.Prefix})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	q, err := task.Declare[json.RawMessage, json.RawMessage](a, "words", task.Concurrency(3))
	if err != nil {
		t.Fatal(err)
	}
	id, err := q.Enqueue(ctx, json.RawMessage(`{"text": "a b c"}`))
	if err != nil {
		t.Fatal(err)
	}
	w := start(t, nil, s.quiet("worker", "--queue", "words", "--wasm", "words", "--wasm-memory", "512", "--wasm-cache-dir", cache, "--env", "GREETING=hi")...)
	in, err := q.Wait(ctx, id)
	if err != nil || in.State != task.Succeeded || string(in.Result) != `{"words":3}` {
		t.Fatalf("task: %+v, %v", in, err)
	}
	res := w.stop(t)
	if res.status != 0 || !strings.Contains(res.stdout, "with wasm module words version 1 (reactor)") {
		t.Fatalf("worker: %+v", res)
	}
}

// TestWasmBuild: "leat wasm build" builds a lines module from Go source.
func TestWasmBuild(t *testing.T) {
	t.Parallel()
	out := filepath.Join(t.TempDir(), "lines.wasm")
	r := run(t, nil, "", "wasm", "build", "-o", out, "../examples/wasm/lines")
	if r.status != 0 || r.stdout != "built "+out+" (lines)\n" {
		t.Fatalf("build: %+v", r)
	}
	if b, err := os.ReadFile(out); err != nil || string(b[:4]) != "\x00asm" {
		t.Fatalf("built: %v", err)
	}
	r = run(t, nil, "", "wasm", "build", "-o", out, t.TempDir())
	if r.status != 1 || !strings.Contains(r.stderr, "no Go files") {
		t.Fatalf("build of an empty directory: %+v", r)
	}
}

// TestWasmBench: "leat wasm bench" runs a module per task and pooled
// beside a Go handler and prints each one's tasks/s.
func TestWasmBench(t *testing.T) {
	t.Parallel()
	module := filepath.Join(t.TempDir(), "answer.wasm")
	if err := os.WriteFile(module, wasmtest.Constant(`{"result": 42}`), 0o644); err != nil {
		t.Fatal(err)
	}
	r := run(t, nil, "", "--redis", redistest.URL(t), "wasm", "bench", "--tasks", "50", "--concurrency", "3", module)
	if r.status != 0 || strings.Count(r.stdout, "\n") != 4 || !strings.Contains(r.stdout, "wasm per task") || !strings.Contains(r.stdout, "wasm pooled") {
		t.Fatalf("bench: %+v", r)
	}
	r = run(t, nil, "", "--redis", redistest.URL(t), "wasm", "bench", "--tasks", "5", "--payload", "{", module)
	if r.status != 2 || !strings.Contains(r.stderr, "--payload is not JSON") {
		t.Fatalf("bench with a bad payload: %+v", r)
	}
}
