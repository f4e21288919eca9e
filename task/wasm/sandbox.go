package wasm

import (
	"crypto/rand"
	"fmt"
	"os"
	"strings"

	"github.com/tetratelabs/wazero"
)

// Defaults of a Sandbox.
const (
	// DefaultMemoryPages is the memory limit of an instance: 2048 pages of
	// 64 KiB, 128 MiB.
	DefaultMemoryPages = 2048
	// MaxMemoryPages is the largest memory limit: 65536 pages, 4 GiB, all
	// a 32-bit module can address.
	MaxMemoryPages = 65536
)

// A Sandbox is what a module may use. The zero value is the default: no
// files, no environment variables, no network, the host's clocks and a
// cryptographic random source, DefaultMemoryPages of memory.
type Sandbox struct {
	// MemoryPages bounds an instance's memory, in 64 KiB pages (default
	// DefaultMemoryPages, at most MaxMemoryPages). A module that declares
	// more at start does not compile; one that grows past it sees its
	// memory.grow fail (a Go module then dies with "out of memory", and
	// its attempt fails).
	MemoryPages uint32
	// Dir is a host directory the module may read and write, mounted at
	// "/" ("" : no file system at all).
	Dir string
	// ReadOnly makes Dir read-only.
	ReadOnly bool
	// Env holds the module's environment variables, each NAME=VALUE (none
	// by default: the worker's own are never passed on).
	Env []string
	// Deterministic gives the module fixed clocks (a wall clock that
	// starts at the same instant each instantiation and advances only
	// when read, no sleeping) and a random source that yields the same
	// bytes each instantiation, so a task's run depends on its payload
	// only.
	Deterministic bool
}

// check validates s and fills in its defaults.
func (s *Sandbox) check() error {
	if s.MemoryPages == 0 {
		s.MemoryPages = DefaultMemoryPages
	}
	if s.MemoryPages > MaxMemoryPages {
		return fmt.Errorf("wasm sandbox: memory of %d pages is over the limit of %d (4 GiB)", s.MemoryPages, MaxMemoryPages)
	}
	if s.Dir != "" {
		fi, err := os.Stat(s.Dir)
		if err != nil {
			return fmt.Errorf("wasm sandbox: directory: %w", err)
		}
		if !fi.IsDir() {
			return fmt.Errorf("wasm sandbox: %s is not a directory", s.Dir)
		}
	}
	for _, v := range s.Env {
		name, _, ok := strings.Cut(v, "=")
		if !ok || name == "" || strings.ContainsRune(v, 0) {
			return fmt.Errorf("wasm sandbox: environment entry %q: want NAME=VALUE", v)
		}
	}
	return nil
}

// moduleConfig returns the configuration of an instance: the sandbox's,
// anonymous (instances of one module live side by side), without a start
// function (the caller names it).
func (s *Sandbox) moduleConfig() wazero.ModuleConfig {
	mc := wazero.NewModuleConfig().WithName("").WithStartFunctions().WithArgs("handler")
	for _, v := range s.Env {
		name, value, _ := strings.Cut(v, "=")
		mc = mc.WithEnv(name, value)
	}
	if s.Dir != "" {
		fc := wazero.NewFSConfig()
		if s.ReadOnly {
			fc = fc.WithReadOnlyDirMount(s.Dir, "/")
		} else {
			fc = fc.WithDirMount(s.Dir, "/")
		}
		mc = mc.WithFSConfig(fc)
	}
	if !s.Deterministic {
		// wazero's defaults are the deterministic ones.
		mc = mc.WithSysWalltime().WithSysNanotime().WithSysNanosleep().WithRandSource(rand.Reader)
	}
	return mc
}
