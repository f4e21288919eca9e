package wasm

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/leatdev/leat/task"
	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"
)

// DefaultRefresh is how long a Handler trusts the version of its module
// it read last before it reads it again.
const DefaultRefresh = time.Second

// Config configures a Handler. Its module comes from a Registry (Registry
// and Name) or is given (Module and Contract).
type Config struct {
	// Registry and Name name the module: the current version of Name in
	// Registry, read again at a task once Refresh passed since the last
	// read.
	Registry *Registry
	Name     string
	// Module is the module's bytes, when it comes from no registry;
	// Contract its contract ("": detected) and Reusable whether its
	// instances may run task after task.
	Module   []byte
	Contract Contract
	Reusable bool

	// Sandbox is what the module's instances may use and their memory.
	Sandbox Sandbox
	// Pool keeps the instances of a reusable module (put with Reusable)
	// between tasks, at most one per task running at once, instead of
	// instantiating the module for each task: much cheaper, but a task
	// sees the state the previous ones left. An instance that fails
	// (traps, exits, times out) is dropped. It does not apply to a module
	// not put as reusable.
	Pool bool
	// Refresh is how long the version of Name read last is trusted
	// (default DefaultRefresh): a new version is picked up by the tasks
	// that start after at most this long, while running tasks finish on
	// the old one.
	Refresh time.Duration
	// CacheDir holds the compiled form of modules, by content hash, so a
	// worker compiles a module once per machine rather than at each start
	// (default DefaultCacheDir(); "-" for none).
	CacheDir string
	// Logger receives the modules' output lines (at debug, tagged with
	// their task) and the handler's events (default slog.Default()).
	Logger *slog.Logger
}

// DefaultCacheDir is the compiled modules' directory by default: leat/wasm
// under the user's cache directory, or under the temporary directory.
func DefaultCacheDir() string {
	dir, err := os.UserCacheDir()
	if err != nil {
		dir = os.TempDir()
	}
	return filepath.Join(dir, "leat", "wasm")
}

// diskCache returns the compilation cache in dir, nil for none.
func diskCache(dir string) wazero.CompilationCache {
	if dir == "" || dir == "-" {
		return nil
	}
	c, err := wazero.NewCompilationCacheWithDir(dir)
	if err != nil {
		return nil
	}
	return c
}

// A Handler runs tasks as WebAssembly modules, in a sandbox: its Handle is
// a task handler for a queue of JSON payloads and results (see
// task.HandleLookup and task.Handle).
type Handler struct {
	cfg   Config
	log   *slog.Logger
	rt    wazero.Runtime
	cache wazero.CompilationCache

	refresh sync.Mutex // one reading of the version at a time
	bad     struct {   // the last version that failed to load, guarded by refresh
		hash    string
		version int64
		err     error
	}
	mu      sync.Mutex
	cur     *module   // the version new tasks run
	checked time.Time // when cur was read from the registry
	closed  bool
}

// module is a compiled version of the handler's module.
type module struct {
	v       Version
	cm      wazero.CompiledModule
	refs    int        // tasks running on it, plus one while current; guarded by Handler.mu
	idle    []instance // pooled instances, guarded by Handler.mu
	retired bool       // no longer current
}

// instance is an instance of a module that runs task after task.
type instance interface {
	run(ctx context.Context, c *call) (ok bool)
	alive() bool
	close(ctx context.Context)
}

// New returns a handler of cfg's module; with a Registry it reads and
// compiles the module's current version now, so that a name the registry
// does not hold is an error at once.
func New(ctx context.Context, cfg Config) (*Handler, error) {
	switch {
	case cfg.Registry != nil && cfg.Module != nil:
		return nil, errors.New("wasm: Registry and Module both set: give one")
	case cfg.Registry == nil && cfg.Module == nil:
		return nil, errors.New("wasm: no module: set Registry and Name, or Module")
	case cfg.Registry != nil && cfg.Name == "":
		return nil, errors.New("wasm: Registry without a Name")
	}
	if err := cfg.Sandbox.check(); err != nil {
		return nil, err
	}
	if cfg.Refresh <= 0 {
		cfg.Refresh = DefaultRefresh
	}
	if cfg.CacheDir == "" {
		cfg.CacheDir = DefaultCacheDir()
	}
	log := cfg.Logger
	if log == nil {
		log = slog.Default()
	}
	h := &Handler{cfg: cfg, log: log}
	rc := wazero.NewRuntimeConfig().WithCloseOnContextDone(true).WithMemoryLimitPages(cfg.Sandbox.MemoryPages)
	if h.cache = diskCache(cfg.CacheDir); h.cache != nil {
		rc = rc.WithCompilationCache(h.cache)
	}
	h.rt = wazero.NewRuntimeWithConfig(ctx, rc)
	if _, err := wasi_snapshot_preview1.Instantiate(ctx, h.rt); err != nil {
		h.Close(ctx)
		return nil, err
	}
	if err := instantiateHost(ctx, h.rt); err != nil {
		h.Close(ctx)
		return nil, err
	}
	var err error
	if cfg.Module != nil {
		sum := sha256.Sum256(cfg.Module)
		v := Version{Name: cfg.Name, Version: 1, Hash: hex.EncodeToString(sum[:]), Contract: cfg.Contract, Reusable: cfg.Reusable, Size: len(cfg.Module)}
		h.cur, err = h.compile(ctx, v, cfg.Module)
		if h.cur != nil {
			h.cur.refs = 1
		}
	} else {
		var m *module
		m, err = h.current(ctx)
		if m != nil {
			h.release(m, nil)
		}
	}
	if err != nil {
		h.Close(ctx)
		return nil, err
	}
	return h, nil
}

// compile compiles version v of the module, whose bytes are b, and checks
// its contract.
func (h *Handler) compile(ctx context.Context, v Version, b []byte) (*module, error) {
	cm, err := h.rt.CompileModule(ctx, b)
	if err != nil {
		return nil, fmt.Errorf("wasm: version %d of %q does not compile: %w", v.Version, v.Name, err)
	}
	if v.Contract == "" {
		if v.Contract, err = Detect(cm); err != nil {
			_ = cm.Close(ctx)
			return nil, err
		}
	}
	if err := Check(cm, v.Contract); err != nil {
		_ = cm.Close(ctx)
		return nil, err
	}
	return &module{v: v, cm: cm}, nil
}

// Version returns the version new tasks run.
func (h *Handler) Version() Version {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.cur == nil {
		return Version{}
	}
	return h.cur.v
}

// current returns the module new tasks run, referenced (release it): the
// version read last, or, once Refresh passed, the registry's current
// version, fetched and compiled when it changed.
func (h *Handler) current(ctx context.Context) (*module, error) {
	loaded := false // this call read the version: take what it found
	for {
		h.mu.Lock()
		if h.closed {
			h.mu.Unlock()
			return nil, errors.New("wasm: handler closed")
		}
		if m := h.cur; m != nil && (loaded || h.cfg.Registry == nil || time.Since(h.checked) < h.cfg.Refresh) {
			m.refs++
			h.mu.Unlock()
			return m, nil
		}
		h.mu.Unlock()
		if !h.refresh.TryLock() {
			// Another task reads the version: wait for it, then look again.
			h.refresh.Lock()
			h.refresh.Unlock()
			continue
		}
		err := h.load(ctx)
		h.refresh.Unlock()
		if err != nil {
			return nil, err
		}
		loaded = true
	}
}

// load reads the registry's current version and makes it current,
// fetching and compiling it when it changed; h.refresh is held.
func (h *Handler) load(ctx context.Context) error {
	v, err := h.cfg.Registry.Current(ctx, h.cfg.Name)
	h.mu.Lock()
	old := h.cur
	h.mu.Unlock()
	if err != nil {
		if old != nil && !errors.Is(err, ErrNotFound) {
			// Redis failing: go on with the version read last, and read
			// again at the next refresh.
			h.log.Warn("wasm module version not read: running the last one read", "module", h.cfg.Name, "version", old.v.Version, "error", err)
			h.mu.Lock()
			h.checked = time.Now()
			h.mu.Unlock()
			return nil
		}
		if errors.Is(err, ErrNotFound) {
			h.swap(nil)
		}
		return fmt.Errorf("wasm module %q: %w", h.cfg.Name, err)
	}
	if old != nil && old.v.Version == v.Version && old.v.Hash == v.Hash {
		h.mu.Lock()
		h.checked = time.Now()
		h.mu.Unlock()
		return nil
	}
	if h.bad.hash == v.Hash && h.bad.version == v.Version {
		return h.keepOld(old, h.bad.err)
	}
	b, err := h.cfg.Registry.Module(ctx, v)
	if err != nil {
		return h.keepOld(old, err)
	}
	start := time.Now()
	m, err := h.compile(ctx, v, b)
	if err != nil {
		// Not again at every task: a version that does not compile here
		// (a memory limit lower than put's, say) stays refused.
		h.bad.hash, h.bad.version, h.bad.err = v.Hash, v.Version, err
		return h.keepOld(old, err)
	}
	h.log.Info("wasm module loaded", "module", v.Name, "version", v.Version, "hash", v.Hash[:12], "contract", v.Contract, "took", time.Since(start))
	h.swap(m)
	return nil
}

// keepOld goes on with the version old after the current version could
// not be loaded (err), until the next refresh; without one it returns err.
func (h *Handler) keepOld(old *module, err error) error {
	if old == nil {
		return err
	}
	h.log.Error("wasm module's new version not loaded: running the last one loaded", "module", h.cfg.Name, "version", old.v.Version, "error", err)
	h.mu.Lock()
	h.checked = time.Now()
	h.mu.Unlock()
	return nil
}

// swap makes m current, retiring the module current before.
func (h *Handler) swap(m *module) {
	h.mu.Lock()
	old := h.cur
	h.cur, h.checked = m, time.Now()
	if m != nil {
		m.refs = 1
	}
	h.mu.Unlock()
	if old != nil {
		h.mu.Lock()
		old.retired = true
		h.mu.Unlock()
		h.release(old, nil)
	}
}

// release drops a reference to m, taking back inst (nil: none, or one
// that cannot run another task); a retired module goes when its last task
// ends.
func (h *Handler) release(m *module, inst instance) {
	h.mu.Lock()
	m.refs--
	keep := inst != nil && !m.retired && !h.closed
	if keep {
		m.idle = append(m.idle, inst)
	}
	var drop []instance
	gone := m.refs == 0
	if gone {
		drop, m.idle = m.idle, nil
	}
	h.mu.Unlock()
	ctx := context.Background()
	if inst != nil && !keep {
		inst.close(ctx)
	}
	for _, i := range drop {
		i.close(ctx)
	}
	if gone {
		_ = m.cm.Close(ctx)
	}
}

// Handle runs task t in an instance of the module: it is a handler for a
// queue of JSON payloads and results. The module's stderr (and a reactor's
// stdout) lines go to the task's log; a lines module's progress and
// partial results to the task's updates. A trap, an exit or a timeout
// fails the attempt, which is retried as the queue says.
func (h *Handler) Handle(ctx context.Context, t *task.Task[json.RawMessage]) (json.RawMessage, error) {
	c := newCall(request{TaskID: t.ID, Payload: t.Payload, Attempt: t.Attempt, Headers: t.Headers, Parents: t.Parents},
		func(kind string, data json.RawMessage) {
			var err error
			if kind == task.KindProgress {
				err = t.Progress(data)
			} else {
				err = t.Partial(data)
			}
			if err != nil {
				h.log.Warn("task update lost", "task", t.ID, "error", err)
			}
		}, t.LogLines, h.log)
	return h.run(ctx, c)
}

// RunOnce runs one task with payload, without Redis (a local test of a
// module): report receives its progress reports and partial results as
// they come, logLine its output lines.
func (h *Handler) RunOnce(ctx context.Context, id string, payload json.RawMessage, report func(kind string, data json.RawMessage), logLine func(string)) (json.RawMessage, error) {
	var sink func([]string)
	if logLine != nil {
		sink = func(lines []string) {
			for _, l := range lines {
				logLine(l)
			}
		}
	}
	return h.run(ctx, newCall(request{TaskID: id, Payload: payload, Attempt: 1}, report, sink, h.log))
}

func (h *Handler) run(ctx context.Context, c *call) (json.RawMessage, error) {
	m, err := h.current(ctx)
	if err != nil {
		return nil, err
	}
	defer c.log.flush()
	pooled := h.cfg.Pool && m.v.Reusable
	var inst instance
	if pooled {
		h.mu.Lock()
		if n := len(m.idle); n > 0 {
			inst, m.idle = m.idle[n-1], m.idle[:n-1]
		}
		h.mu.Unlock()
		if inst != nil && !inst.alive() {
			inst.close(context.Background())
			inst = nil
		}
	}
	switch {
	case inst != nil:
	case m.v.Contract == Lines && pooled:
		inst = startLines(h.rt, m.cm, &h.cfg.Sandbox)
	case m.v.Contract == Lines:
		runLinesOnce(ctx, h.rt, m.cm, &h.cfg.Sandbox, c)
		h.release(m, nil)
		return c.result, c.err
	default:
		r, err := newReactor(ctx, h.rt, m.cm, &h.cfg.Sandbox, c)
		if err != nil {
			h.release(m, nil)
			return nil, err
		}
		inst = r
	}
	ok := inst.run(ctx, c)
	if !pooled || !ok {
		inst.close(context.Background())
		inst = nil
	}
	h.release(m, inst)
	return c.result, c.err
}

// Close closes the handler's instances and modules; tasks running fail.
func (h *Handler) Close(ctx context.Context) error {
	h.mu.Lock()
	h.closed = true
	m := h.cur
	h.cur = nil
	h.mu.Unlock()
	if m != nil {
		h.mu.Lock()
		m.retired = true
		h.mu.Unlock()
		h.release(m, nil)
	}
	err := h.rt.Close(ctx)
	if h.cache != nil {
		_ = h.cache.Close(ctx)
	}
	return err
}
