package wasm

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/leatdev/leat/app"
	"github.com/leatdev/leat/internal/rdb"
	"github.com/redis/go-redis/v9"
	"github.com/tetratelabs/wazero"
)

// DefaultMaxSize bounds the size of a module Put stores: 64 MiB.
const DefaultMaxSize = 64 << 20

// ErrNotFound is matched by the error of a name the registry does not
// hold.
var ErrNotFound = errors.New("wasm: no module of that name")

// ErrTooLarge is matched by Put's error for a module over its size limit.
var ErrTooLarge = errors.New("wasm: module too large")

// A Version is one version of a named module in the registry.
type Version struct {
	Name     string    `json:"name"`
	Version  int64     `json:"version"`  // 1, 2... for each Put of the name
	Hash     string    `json:"hash"`     // SHA-256 of the module, hex
	Contract Contract  `json:"contract"` // how the worker talks to it
	Reusable bool      `json:"reusable"` // an instance may run many tasks (see Config.Pool)
	Size     int       `json:"size"`     // bytes
	PutAt    time.Time `json:"put_at"`
}

// A Registry stores modules in an app's Redis, by name and version, for
// every worker to fetch.
type Registry struct {
	c        redis.UniversalClient
	k        rdb.WasmKeys
	cacheDir string
}

// NewRegistry returns the registry of the app a (its Redis and key
// prefix). cacheDir is where Put leaves the compiled form of the modules
// it checks ("": none; see Config.CacheDir).
func NewRegistry(a *app.App, cacheDir string) *Registry {
	cfg := a.Config()
	return &Registry{c: a.Client(), k: rdb.NewWasmKeys(rdb.NewKeySpace(cfg.KeyPrefix, cfg.Name)), cacheDir: cacheDir}
}

// PutOptions are the options of Registry.Put.
type PutOptions struct {
	// Contract is the module's contract ("": detected from its exports,
	// Reactor when it exports execute, Lines when it exports _start).
	Contract Contract
	// Reusable declares that an instance of the module may run task after
	// task (see Config.Pool): a module that keeps no state from a task to
	// the next, or only state it means to keep.
	Reusable bool
	// MaxSize bounds the module's size in bytes (default DefaultMaxSize).
	MaxSize int
	// MemoryPages is the memory limit the module must start within
	// (default DefaultMemoryPages): the workers' Sandbox.MemoryPages.
	MemoryPages uint32
}

// Put stores module as the new version of name, after checking that it is
// a module wazero compiles, that it follows its contract, and that it
// starts within the memory limit; a module that does not is refused with
// an error that says why, and nothing is stored. The current version of a
// name holding the same module with the same options stays current: Put
// returns it.
func (r *Registry) Put(ctx context.Context, name string, module []byte, o PutOptions) (Version, error) {
	if err := rdb.CheckName("wasm module", name); err != nil {
		return Version{}, err
	}
	if o.MaxSize <= 0 {
		o.MaxSize = DefaultMaxSize
	}
	if len(module) > o.MaxSize {
		return Version{}, fmt.Errorf("%w: %d bytes, over the limit of %d", ErrTooLarge, len(module), o.MaxSize)
	}
	if len(module) == 0 {
		return Version{}, errors.New("wasm: module is empty")
	}
	contract, err := r.check(ctx, module, o)
	if err != nil {
		return Version{}, err
	}
	sum := sha256.Sum256(module)
	v := Version{Name: name, Hash: hex.EncodeToString(sum[:]), Contract: contract, Reusable: o.Reusable, Size: len(module), PutAt: time.Now().UTC().Truncate(time.Millisecond)}
	meta, err := json.Marshal(v)
	if err != nil {
		return Version{}, err
	}
	s, _, err := rdb.WasmPut(ctx, r.c, r.k, name, v.Hash, string(meta), module)
	if err != nil {
		return Version{}, fmt.Errorf("wasm: put %s: %w", name, err)
	}
	return parseVersion(s)
}

// check compiles module and checks its contract; it returns the contract.
func (r *Registry) check(ctx context.Context, module []byte, o PutOptions) (Contract, error) {
	pages := o.MemoryPages
	if pages == 0 {
		pages = DefaultMemoryPages
	}
	rc := wazero.NewRuntimeConfig().WithCloseOnContextDone(true).WithMemoryLimitPages(pages)
	if cache := diskCache(r.cacheDir); cache != nil {
		rc = rc.WithCompilationCache(cache)
		defer cache.Close(ctx)
	}
	rt := wazero.NewRuntimeWithConfig(ctx, rc)
	defer rt.Close(ctx)
	cm, err := rt.CompileModule(ctx, module)
	if err != nil {
		return "", fmt.Errorf("wasm: module does not compile: %w", err)
	}
	c := o.Contract
	if c == "" {
		if c, err = Detect(cm); err != nil {
			return "", err
		}
	}
	if err := Check(cm, c); err != nil {
		return "", err
	}
	return c, nil
}

func parseVersion(s string) (Version, error) {
	var v Version
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		return v, fmt.Errorf("wasm registry: corrupt version %q: %w", cut(s, tailLine), err)
	}
	return v, nil
}

// Current returns the current version of name, or an error matching
// ErrNotFound.
func (r *Registry) Current(ctx context.Context, name string) (Version, error) {
	s, err := rdb.WasmCurrent(ctx, r.c, r.k, name)
	if errors.Is(err, redis.Nil) {
		return Version{}, fmt.Errorf("%w: %q", ErrNotFound, name)
	}
	if err != nil {
		return Version{}, err
	}
	return parseVersion(s)
}

// List returns the current version of every name, by name.
func (r *Registry) List(ctx context.Context) ([]Version, error) {
	m, err := rdb.WasmNames(ctx, r.c, r.k)
	if err != nil {
		return nil, err
	}
	out := make([]Version, 0, len(m))
	for _, s := range m {
		v, err := parseVersion(s)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	slices.SortFunc(out, func(a, b Version) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// Versions returns the versions of name, oldest first, or an error
// matching ErrNotFound.
func (r *Registry) Versions(ctx context.Context, name string) ([]Version, error) {
	m, err := rdb.WasmVersions(ctx, r.c, r.k, name)
	if err != nil {
		return nil, err
	}
	if len(m) == 0 {
		return nil, fmt.Errorf("%w: %q", ErrNotFound, name)
	}
	out := make([]Version, 0, len(m))
	for n, s := range m {
		v, err := parseVersion(s)
		if err != nil {
			return nil, err
		}
		if want, _ := strconv.ParseInt(n, 10, 64); want != v.Version {
			return nil, fmt.Errorf("wasm registry: version %s of %q holds version %d", n, name, v.Version)
		}
		out = append(out, v)
	}
	slices.SortFunc(out, func(a, b Version) int { return int(a.Version - b.Version) })
	return out, nil
}

// Module returns the bytes of version v, checked against its hash.
func (r *Registry) Module(ctx context.Context, v Version) ([]byte, error) {
	b, err := rdb.WasmModule(ctx, r.c, r.k, v.Hash)
	if errors.Is(err, redis.Nil) {
		return nil, fmt.Errorf("%w: version %d of %q is gone (removed)", ErrNotFound, v.Version, v.Name)
	}
	if err != nil {
		return nil, err
	}
	if sum := sha256.Sum256(b); hex.EncodeToString(sum[:]) != v.Hash {
		return nil, fmt.Errorf("wasm registry: the module of version %d of %q does not match its hash %s", v.Version, v.Name, v.Hash)
	}
	return b, nil
}

// Remove removes name, all its versions, and the modules no other name
// refers to; it returns how many versions went, or an error matching
// ErrNotFound. Workers running a removed module finish their tasks with
// it, and fail the next ones.
func (r *Registry) Remove(ctx context.Context, name string) (int, error) {
	for range 10 {
		vs, err := r.Versions(ctx, name)
		if err != nil {
			return 0, err
		}
		hashes := make([]string, len(vs))
		for i, v := range vs {
			hashes[i] = v.Hash
		}
		n, err := rdb.WasmRemove(ctx, r.c, r.k, name, hashes)
		if errors.Is(err, rdb.ErrWasmChanged) {
			continue
		}
		return n, err
	}
	return 0, fmt.Errorf("wasm: remove %q: its versions keep changing", name)
}
