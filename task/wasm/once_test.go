package wasm_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/leatdev/leat/internal/tools/redistest"
	"github.com/leatdev/leat/internal/tools/wasmtest"
	"github.com/leatdev/leat/task"
	"github.com/leatdev/leat/task/wasm"
)

// handler returns a handler of the module at path (no registry), closed
// at the test's end.
func handler(t *testing.T, module []byte, cfg wasm.Config) *wasm.Handler {
	t.Helper()
	cfg.Module = module
	if cfg.CacheDir == "" {
		cfg.CacheDir = cacheDir(t)
	}
	h, err := wasm.New(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close(context.Background()) })
	return h
}

var (
	cacheOnce sync.Once
	cache     string
)

// cacheDir is a compilation cache shared by the tests of this run,
// removed once they ran.
func cacheDir(tb testing.TB) string {
	cacheOnce.Do(func() {
		d, err := os.MkdirTemp("", "leat-wasm-cache-")
		if err != nil {
			tb.Fatal(err)
		}
		cache = d
		redistest.AtExit(func() { _ = os.RemoveAll(d) })
	})
	return cache
}

// outcome is what a local run gave.
type outcome struct {
	result  string
	err     error
	updates []string
	logs    []string
}

func runOnce(t *testing.T, h *wasm.Handler, payload string, timeout time.Duration) outcome {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	var o outcome
	var mu sync.Mutex
	res, err := h.RunOnce(ctx, "t1", json.RawMessage(payload), func(kind string, data json.RawMessage) {
		mu.Lock()
		o.updates = append(o.updates, kind+" "+string(data))
		mu.Unlock()
	}, func(line string) {
		mu.Lock()
		o.logs = append(o.logs, line)
		mu.Unlock()
	})
	o.result, o.err = string(res), err
	return o
}

// contracts are the two test handlers, per-task and pooled.
func contracts(t *testing.T) map[string]wasm.Config {
	lines := wasmtest.Read(t, wasmtest.Lines(t, "v1"))
	reactor := wasmtest.Read(t, wasmtest.Reactor(t, "v1"))
	return map[string]wasm.Config{
		"lines":          {Module: lines},
		"lines/pool":     {Module: lines, Reusable: true, Pool: true},
		"reactor":        {Module: reactor},
		"reactor/pool":   {Module: reactor, Reusable: true, Pool: true},
		"reactor/notset": {Module: reactor, Pool: true}, // not reusable: per task
	}
}

func TestWordCount(t *testing.T) {
	for name, cfg := range contracts(t) {
		t.Run(name, func(t *testing.T) {
			h := handler(t, cfg.Module, cfg)
			for i := range 3 {
				o := runOnce(t, h, `{"text": "one two three"}`, time.Minute)
				if o.err != nil {
					t.Fatalf("run %d: %v", i, o.err)
				}
				if o.result != `{"version":"v1","words":3}` {
					t.Fatalf("run %d: result %s", i, o.result)
				}
				if len(o.logs) == 0 {
					t.Fatalf("run %d: no log lines", i)
				}
				want := `progress {"done":1}`
				if strings.HasPrefix(name, "lines") {
					want = `progress 50,partial {"words":3}`
				}
				if strings.Join(o.updates, ",") != want {
					t.Fatalf("run %d: updates %q, want %s", i, o.updates, want)
				}
			}
		})
	}
}

func TestFailures(t *testing.T) {
	for name, cfg := range contracts(t) {
		t.Run(name, func(t *testing.T) {
			h := handler(t, cfg.Module, cfg)
			o := runOnce(t, h, `{"fail": "no way", "retry": false}`, time.Minute)
			if o.err == nil || !strings.HasSuffix(o.err.Error(), "no way") || !errors.Is(o.err, task.ErrSkipRetry) {
				t.Fatalf("fail without retry: %v", o.err)
			}
			o = runOnce(t, h, `{"fail": "later"}`, time.Minute)
			if o.err == nil || !strings.HasSuffix(o.err.Error(), "later") || errors.Is(o.err, task.ErrSkipRetry) {
				t.Fatalf("fail with retry: %v", o.err)
			}
			o = runOnce(t, h, `{"panic": true}`, time.Minute)
			if o.err == nil || !strings.Contains(o.err.Error(), "panic: asked to panic") {
				t.Fatalf("panic: %v", o.err)
			}
			// A loop is stopped at the task's timeout.
			o = runOnce(t, h, `{"loop": true}`, 500*time.Millisecond)
			if !errors.Is(o.err, context.DeadlineExceeded) {
				t.Fatalf("loop: %v", o.err)
			}
			// The handler goes on.
			if o := runOnce(t, h, `{"text": "a b"}`, time.Minute); o.err != nil || o.result != `{"version":"v1","words":2}` {
				t.Fatalf("after the failures: %s, %v", o.result, o.err)
			}
		})
	}
}

func TestMemoryLimit(t *testing.T) {
	for name, cfg := range contracts(t) {
		t.Run(name, func(t *testing.T) {
			cfg.Sandbox.MemoryPages = 256 // 16 MiB
			h := handler(t, cfg.Module, cfg)
			o := runOnce(t, h, `{"alloc_mb": 64}`, time.Minute)
			if o.err == nil || !strings.Contains(o.err.Error(), "out of memory") {
				t.Fatalf("allocating 64 MiB in 16: %v", o.err)
			}
			if o := runOnce(t, h, `{"text": "a b"}`, time.Minute); o.err != nil {
				t.Fatalf("after: %v", o.err)
			}
		})
	}
}

func TestTrap(t *testing.T) {
	h := handler(t, wasmtest.Trap(), wasm.Config{})
	o := runOnce(t, h, `{}`, time.Minute)
	if o.err == nil || !strings.Contains(o.err.Error(), "trapped in execute") || !strings.Contains(o.err.Error(), "unreachable") || errors.Is(o.err, task.ErrSkipRetry) {
		t.Fatalf("trap: %v", o.err)
	}
}

func TestEcho(t *testing.T) {
	for _, pool := range []bool{false, true} {
		h := handler(t, wasmtest.Echo(), wasm.Config{Pool: pool, Reusable: true})
		if o := runOnce(t, h, `{"result": {"a": [1, 2]}}`, time.Minute); o.err != nil || o.result != `{"a":[1,2]}` {
			t.Fatalf("echo: %s, %v", o.result, o.err)
		}
		// Not an envelope: a failure for good.
		if o := runOnce(t, h, `[1]`, time.Minute); o.err == nil || !errors.Is(o.err, task.ErrSkipRetry) || !strings.Contains(o.err.Error(), "not an envelope") {
			t.Fatalf("no envelope: %v", o.err)
		}
		if o := runOnce(t, h, `{"snooze": 2}`, time.Minute); !errors.As(o.err, new(*task.SnoozeError)) {
			t.Fatalf("snooze: %v", o.err)
		}
	}
}

func TestRefusesBadModules(t *testing.T) {
	_, err := wasm.New(context.Background(), wasm.Config{Module: wasmtest.NoExecute(), Contract: wasm.Reactor, CacheDir: "-"})
	if !errors.Is(err, wasm.ErrContract) || !strings.Contains(err.Error(), "no function execute exported") {
		t.Fatalf("no execute: %v", err)
	}
	_, err = wasm.New(context.Background(), wasm.Config{Module: []byte("not wasm"), CacheDir: "-"})
	if err == nil || !strings.Contains(err.Error(), "does not compile") {
		t.Fatalf("not wasm: %v", err)
	}
}

func TestSandbox(t *testing.T) {
	lines := wasmtest.Read(t, wasmtest.Lines(t, "v1"))
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "hello.txt"), []byte("hi"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("LEAT_SECRET", "s3cret")
	closed := handler(t, lines, wasm.Config{})
	if o := runOnce(t, closed, `{"env": "LEAT_SECRET"}`, time.Minute); o.err != nil || o.result != `""` {
		t.Fatalf("the worker's environment leaked: %s, %v", o.result, o.err)
	}
	if o := runOnce(t, closed, `{"file": "/hello.txt"}`, time.Minute); o.err == nil {
		t.Fatalf("a file read without a directory granted: %s", o.result)
	}
	open := handler(t, lines, wasm.Config{Sandbox: wasm.Sandbox{Dir: dir, ReadOnly: true, Env: []string{"GREETING=hello"}}})
	if o := runOnce(t, open, `{"env": "GREETING"}`, time.Minute); o.err != nil || o.result != `"hello"` {
		t.Fatalf("env: %s, %v", o.result, o.err)
	}
	if o := runOnce(t, open, `{"file": "/hello.txt"}`, time.Minute); o.err != nil || o.result != `"hi"` {
		t.Fatalf("file: %s, %v", o.result, o.err)
	}
}

func TestPoolKeepsInstances(t *testing.T) {
	reactor := wasmtest.Read(t, wasmtest.Reactor(t, "v1"))
	pooled := handler(t, reactor, wasm.Config{Reusable: true, Pool: true})
	fresh := handler(t, reactor, wasm.Config{Reusable: true})
	for i := 1; i <= 3; i++ {
		if o := runOnce(t, pooled, `{"calls": true}`, time.Minute); o.err != nil || o.result != strings.Repeat("", 0)+itoa(i) {
			t.Fatalf("pooled call %d: %s, %v", i, o.result, o.err)
		}
		if o := runOnce(t, fresh, `{"calls": true}`, time.Minute); o.err != nil || o.result != "1" {
			t.Fatalf("per-task call %d: %s, %v", i, o.result, o.err)
		}
	}
}

func itoa(i int) string { b, _ := json.Marshal(i); return string(b) }
