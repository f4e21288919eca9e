package wasm_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/leatdev/leat/app"
	"github.com/leatdev/leat/internal/tools/redistest"
	"github.com/leatdev/leat/internal/tools/wasmtest"
	"github.com/leatdev/leat/task/wasm"
)

// testApp is app "shop" on the shared test server under a fresh prefix.
func testApp(t *testing.T) *app.App {
	t.Helper()
	c, prefix := redistest.Client(t)
	a, err := app.New(app.Config{Name: "shop", Client: c, KeyPrefix: prefix, Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	return a
}

func TestRegistry(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	a := testApp(t)
	reg := wasm.NewRegistry(a, cacheDir(t))
	lines := wasmtest.Read(t, wasmtest.Lines(t, "v1"))
	reactor := wasmtest.Read(t, wasmtest.Reactor(t, "v1"))

	v, err := reg.Put(ctx, "words", lines, wasm.PutOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if v.Name != "words" || v.Version != 1 || v.Contract != wasm.Lines || v.Size != len(lines) || len(v.Hash) != 64 {
		t.Fatalf("put: %+v", v)
	}
	// The same module again: the same version.
	if again, err := reg.Put(ctx, "words", lines, wasm.PutOptions{}); err != nil || again != v {
		t.Fatalf("put again: %+v, %v", again, err)
	}
	// Another module, or the same reusable: a new version.
	v2, err := reg.Put(ctx, "words", reactor, wasm.PutOptions{Contract: wasm.Reactor})
	if err != nil || v2.Version != 2 || v2.Contract != wasm.Reactor {
		t.Fatalf("put v2: %+v, %v", v2, err)
	}
	v3, err := reg.Put(ctx, "words", reactor, wasm.PutOptions{Reusable: true})
	if err != nil || v3.Version != 3 || !v3.Reusable || v3.Contract != wasm.Reactor {
		t.Fatalf("put v3: %+v, %v", v3, err)
	}
	if cur, err := reg.Current(ctx, "words"); err != nil || cur != v3 {
		t.Fatalf("current: %+v, %v", cur, err)
	}
	vs, err := reg.Versions(ctx, "words")
	if err != nil || len(vs) != 3 || vs[0] != v || vs[2] != v3 {
		t.Fatalf("versions: %+v, %v", vs, err)
	}
	if b, err := reg.Module(ctx, v); err != nil || string(b) != string(lines) {
		t.Fatalf("module v1: %d bytes, %v", len(b), err)
	}

	// Refused at the door, nothing stored.
	for _, c := range []struct {
		name   string
		module []byte
		o      wasm.PutOptions
		want   string
	}{
		{"no-execute", wasmtest.NoExecute(), wasm.PutOptions{Contract: wasm.Reactor}, "no function execute exported"},
		{"no-execute-detected", wasmtest.NoExecute(), wasm.PutOptions{}, "exports neither execute (reactor) nor _start (lines)"},
		{"lines-as-reactor", lines, wasm.PutOptions{Contract: wasm.Reactor}, "no function alloc exported"},
		{"imports-env", wasmtest.ImportsEnv(), wasm.PutOptions{Contract: wasm.Reactor}, "it imports env.abort, and only wasi_snapshot_preview1 and leat.progress and leat.partial are offered"},
		{"not-wasm", []byte("\x00asm garbage"), wasm.PutOptions{}, "does not compile"},
		{"too-large", lines, wasm.PutOptions{MaxSize: 1000}, "over the limit of 1000"},
		{"too-little-memory", lines, wasm.PutOptions{MemoryPages: 2}, "does not compile"},
		{"bad name!", lines, wasm.PutOptions{}, "invalid"},
	} {
		_, err := reg.Put(ctx, c.name, c.module, c.o)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("put %s: %v, want an error with %q", c.name, err, c.want)
		}
		if _, err := reg.Current(ctx, c.name); !errors.Is(err, wasm.ErrNotFound) {
			t.Errorf("put %s stored it: %v", c.name, err)
		}
	}

	// Two names share a module: removing one keeps it for the other.
	if _, err := reg.Put(ctx, "copy", lines, wasm.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	list, err := reg.List(ctx)
	if err != nil || len(list) != 2 || list[0].Name != "copy" || list[1] != v3 {
		t.Fatalf("list: %+v, %v", list, err)
	}
	if n, err := reg.Remove(ctx, "words"); err != nil || n != 3 {
		t.Fatalf("remove: %d, %v", n, err)
	}
	if _, err := reg.Current(ctx, "words"); !errors.Is(err, wasm.ErrNotFound) {
		t.Fatalf("current after remove: %v", err)
	}
	if _, err := reg.Module(ctx, v2); !errors.Is(err, wasm.ErrNotFound) {
		t.Fatalf("the reactor outlived its only name: %v", err)
	}
	cp, err := reg.Current(ctx, "copy")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := reg.Module(ctx, cp); err != nil {
		t.Fatalf("the module of another name went: %v", err)
	}
	if _, err := reg.Remove(ctx, "words"); !errors.Is(err, wasm.ErrNotFound) {
		t.Fatalf("remove twice: %v", err)
	}
	// Versions go on from the last, never repeating one a worker may hold.
	if v, err := reg.Put(ctx, "words", lines, wasm.PutOptions{}); err != nil || v.Version != 4 {
		t.Fatalf("put after remove: %+v, %v", v, err)
	}
}

// TestVersionNotLoadedKeepsOld: a worker that cannot compile a new
// version (it needs more memory than the worker allows) goes on with the
// version it has.
func TestVersionNotLoadedKeepsOld(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	reg := wasm.NewRegistry(testApp(t), cacheDir(t))
	if _, err := reg.Put(ctx, "m", wasmtest.Constant(`{"result": "v1"}`), wasm.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	h, err := wasm.New(ctx, wasm.Config{Registry: reg, Name: "m", Refresh: time.Nanosecond, CacheDir: cacheDir(t),
		Sandbox: wasm.Sandbox{MemoryPages: 2}, Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close(ctx)
	if o := runOnce(t, h, `{}`, time.Minute); o.err != nil || o.result != `"v1"` {
		t.Fatalf("v1: %s, %v", o.result, o.err)
	}
	// The Go module starts with 44 pages: more than the worker's 2.
	if _, err := reg.Put(ctx, "m", wasmtest.Read(t, wasmtest.Lines(t, "v1")), wasm.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if o := runOnce(t, h, `{}`, time.Minute); o.err != nil || o.result != `"v1"` {
			t.Fatalf("after a version that does not fit: %s, %v", o.result, o.err)
		}
	}
	if v := h.Version(); v.Version != 1 {
		t.Fatalf("version %d", v.Version)
	}
	// A worker that starts then has no version it can run.
	_, err = wasm.New(ctx, wasm.Config{Registry: reg, Name: "m", CacheDir: cacheDir(t), Sandbox: wasm.Sandbox{MemoryPages: 2}})
	if err == nil || !strings.Contains(err.Error(), "does not compile") {
		t.Fatalf("a new worker: %v", err)
	}
}
