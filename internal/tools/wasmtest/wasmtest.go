// Package wasmtest builds the WebAssembly test handlers of package
// task/wasm (its testdata: a lines module and a reactor, both counting
// words and misbehaving on request) with the Go toolchain, once per test
// binary run, and assembles tiny modules by hand for the cases no
// compiler emits.
package wasmtest

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/leatdev/leat/internal/tools/redistest"
	"github.com/leatdev/leat/task/wasm"
)

var (
	mu    sync.Mutex
	dir   string
	built = map[string]string{}
)

// source returns the directory of a test handler.
func source(name string) string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "..", "task", "wasm", "testdata", name)
}

// Lines returns the path of the lines test handler built with its
// version set to version.
func Lines(tb testing.TB, version string) string { return build(tb, "lines", version) }

// Reactor returns the path of the reactor test handler built with its
// version set to version.
func Reactor(tb testing.TB, version string) string { return build(tb, "reactor", version) }

func build(tb testing.TB, name, version string) string {
	tb.Helper()
	mu.Lock()
	defer mu.Unlock()
	key := name + "@" + version
	if p, ok := built[key]; ok {
		return p
	}
	if dir == "" {
		d, err := os.MkdirTemp("", "leat-wasmtest-")
		if err != nil {
			tb.Fatal(err)
		}
		dir = d
		redistest.AtExit(func() { _ = os.RemoveAll(d) })
	}
	out := filepath.Join(dir, name+"-"+version+".wasm")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	if _, err := wasm.Build(ctx, source(name), out, wasm.BuildOptions{Flags: []string{"-ldflags=-X main.version=" + version}}); err != nil {
		tb.Fatalf("build %s: %v", key, err)
	}
	built[key] = out
	return out
}

// Read returns the bytes of the module at path.
func Read(tb testing.TB, path string) []byte {
	tb.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

// Module types and opcodes of the hand-made modules.
const (
	typeI32toI32    = 0 // (i32) -> i32
	typeI32I32toI64 = 1 // (i32, i32) -> i64
)

// section returns a module section: its id, size and content.
func section(id byte, content ...byte) []byte {
	return append([]byte{id, byte(len(content))}, content...)
}

func name(s string) []byte { return append([]byte{byte(len(s))}, s...) }

// module assembles a module with one page of memory exported as "memory",
// alloc (returning 1024) and, with execute, an execute whose body is body
// (its locals declaration and end added).
func module(execute bool, body ...byte) []byte {
	m := []byte{0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00}
	m = append(m, section(1, 2, 0x60, 1, 0x7f, 1, 0x7f, 0x60, 2, 0x7f, 0x7f, 1, 0x7e)...)
	funcs := []byte{1, typeI32toI32}
	if execute {
		funcs = []byte{2, typeI32toI32, typeI32I32toI64}
	}
	m = append(m, section(3, funcs...)...)
	m = append(m, section(5, 1, 0x00, 1)...)
	exports := []byte{2}
	exports = append(append(exports, name("memory")...), 0x02, 0)
	exports = append(append(exports, name("alloc")...), 0x00, 0)
	if execute {
		exports[0] = 3
		exports = append(append(exports, name("execute")...), 0x00, 1)
	}
	m = append(m, section(7, exports...)...)
	alloc := []byte{5, 0, 0x41, 0x80, 0x08, 0x0b} // i32.const 1024
	code := append([]byte{1}, alloc...)
	if execute {
		code[0] = 2
		fn := append([]byte{0}, body...)
		fn = append(fn, 0x0b)
		code = append(append(code, byte(len(fn))), fn...)
	}
	return append(m, section(10, code...)...)
}

// NoExecute is a reactor without execute: alloc and memory only.
func NoExecute() []byte { return module(false) }

// Trap is a reactor whose execute traps (unreachable).
func Trap() []byte { return module(true, 0x00) }

// Echo is a reactor whose execute returns what it was given: the pointer
// it was passed in the high 32 bits, the length in the low ones.
func Echo() []byte {
	return module(true,
		0x20, 0, 0xad, 0x42, 32, 0x86, // local.get 0; i64.extend_i32_u; i64.const 32; i64.shl
		0x20, 1, 0xad, 0x84, // local.get 1; i64.extend_i32_u; i64.or
	)
}

// ImportsEnv is a module that imports env.abort, as AssemblyScript's do by
// default: only WASI is offered.
func ImportsEnv() []byte {
	m := []byte{0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00}
	m = append(m, section(1, 1, 0x60, 1, 0x7f, 1, 0x7f)...)
	imp := append([]byte{1}, name("env")...)
	imp = append(append(imp, name("abort")...), 0x00, 0)
	m = append(m, section(2, imp...)...)
	m = append(m, section(5, 1, 0x00, 1)...)
	return append(m, section(7, append(append([]byte{1}, name("memory")...), 0x02, 0)...)...)
}

// Constant is a reactor whose execute answers answer (at most 100 bytes),
// whatever its payload: a module that compiles in no time, for tests of
// versions.
func Constant(answer string) []byte {
	m := module(true,
		0x42, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x02, // i64.const 2048<<32
		0x42, byte(len(answer))|0x80, 0x00, // i64.const len, in two bytes of LEB128 (below 128)
		0x84, // i64.or
	)
	data := []byte{1, 0x00, 0x41, 0x80, 0x10, 0x0b, byte(len(answer))}
	return append(m, section(11, append(data, answer...)...)...)
}
