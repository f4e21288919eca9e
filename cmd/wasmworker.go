package cmd

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/leatdev/leat/metrics"
	"github.com/leatdev/leat/task"
	"github.com/leatdev/leat/task/wasm"
	"github.com/urfave/cli/v2"
)

// Names of the flags of a worker running a WebAssembly handler.
const (
	flagWasm              = "wasm"
	flagWasmMemory        = "wasm-memory"
	flagWasmDir           = "wasm-dir"
	flagWasmReadOnly      = "wasm-read-only"
	flagWasmPool          = "wasm-pool"
	flagWasmDeterministic = "wasm-deterministic"
	flagWasmCache         = "wasm-cache-dir"
)

func wasmFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{
			Name:    flagWasm,
			Usage:   "run the tasks of --queue with the WebAssembly module stored as `NAME` (leat wasm put), in a sandbox",
			EnvVars: []string{envName(flagWasm)},
		},
		&cli.UintFlag{
			Name:        flagWasmMemory,
			Usage:       "with --wasm, bound an instance's memory to `PAGES` of 64 KiB",
			EnvVars:     []string{envName(flagWasmMemory)},
			DefaultText: fmt.Sprintf("%d (128 MiB)", wasm.DefaultMemoryPages),
		},
		&cli.StringFlag{
			Name:    flagWasmDir,
			Usage:   "with --wasm, let the module read and write `DIR`, mounted at / (none by default)",
			EnvVars: []string{envName(flagWasmDir)},
		},
		&cli.BoolFlag{
			Name:    flagWasmReadOnly,
			Usage:   "with --wasm-dir, let the module only read it",
			EnvVars: []string{envName(flagWasmReadOnly)},
		},
		&cli.BoolFlag{
			Name:    flagWasmPool,
			Usage:   "with --wasm, keep the instances of a module put with --reusable from a task to the next instead of instantiating it per task",
			EnvVars: []string{envName(flagWasmPool)},
		},
		&cli.BoolFlag{
			Name:    flagWasmDeterministic,
			Usage:   "with --wasm, give the module fixed clocks and random bytes, so a run depends on its payload only",
			EnvVars: []string{envName(flagWasmDeterministic)},
		},
		&cli.StringFlag{
			Name:        flagWasmCache,
			Usage:       "with --wasm, keep compiled modules in `DIR` (- for none)",
			EnvVars:     []string{envName(flagWasmCache)},
			DefaultText: wasm.DefaultCacheDir(),
		},
	}
}

// wasmEnv returns the module's environment from --env: see passEnv.
func wasmEnv(c *cli.Context) ([]string, error) { return passEnv(execEnv(c)) }

// passEnv returns a module's environment from entries: NAME=VALUE as it
// is, a bare NAME with the worker's value (when set; never a LEAT_ one).
func passEnv(entries []string) ([]string, error) {
	var env []string
	for _, v := range entries {
		if strings.Contains(v, "=") {
			env = append(env, v)
			continue
		}
		if strings.HasPrefix(v, "LEAT_") {
			return nil, usageErrorf("--%s %s: leat's own variables are not passed on to handlers (set a value with NAME=VALUE)", flagEnv, v)
		}
		if val, ok := os.LookupEnv(v); ok {
			env = append(env, v+"="+val)
		}
	}
	return env, nil
}

// wasmWorker runs "leat worker --queue Q --wasm NAME": a worker of one task
// queue whose handler is a module of the app's registry.
func wasmWorker(c *cli.Context) error {
	if err := wantArgs(c); err != nil {
		return err
	}
	name, queue := c.String(flagWasm), c.String(flagQueue)
	switch {
	case c.String(flagExec) != "":
		return usageErrorf("--%s and --%s: give one handler", flagWasm, flagExec)
	case queue == "":
		return usageErrorf("--%s needs --%s, the task queue to run", flagWasm, flagQueue)
	case c.String(flagProcessors) != "":
		return usageErrorf("--%s runs one task queue: it takes no --%s", flagWasm, flagProcessors)
	case c.String(flagTestInput) != "":
		return usageErrorf("--%s goes with --%s", flagTestInput, flagExec)
	case c.Bool(flagEnvAll):
		return usageErrorf("--%s goes with --%s: a module gets only the variables of --%s", flagEnvAll, flagExec, flagEnv)
	}
	env, err := wasmEnv(c)
	if err != nil {
		return err
	}
	pages := c.Uint(flagWasmMemory)
	if pages > wasm.MaxMemoryPages {
		return usageErrorf("--%s %d: at most %d pages (4 GiB)", flagWasmMemory, pages, wasm.MaxMemoryPages)
	}
	cfg, exporter, err := workerSettings(c)
	if err != nil {
		return err
	}
	a, err := openAppWith(c, nil, cfg)
	if err != nil {
		return err
	}
	defer a.Close()
	cache := c.String(flagWasmCache)
	h, err := wasm.New(c.Context, wasm.Config{
		Registry: wasm.NewRegistry(a, cache), Name: name, CacheDir: cache, Pool: c.Bool(flagWasmPool),
		Sandbox: wasm.Sandbox{
			MemoryPages: uint32(pages), Dir: c.String(flagWasmDir), ReadOnly: c.Bool(flagWasmReadOnly),
			Env: env, Deterministic: c.Bool(flagWasmDeterministic),
		},
		Logger: a.Logger().With("queue", queue),
	})
	if err != nil {
		if errors.Is(err, wasm.ErrNotFound) {
			return usageErrorf("--%s: %w (store it with leat wasm put %s FILE)", flagWasm, err, name)
		}
		return err
	}
	defer h.Close(context.Background())
	var opts []task.Option
	if g := c.Duration(flagGrace); g > 0 {
		opts = append(opts, task.Grace(g))
	}
	if _, err := task.HandleLookup(c.Context, a, queue, h.Handle, opts...); err != nil {
		if errors.Is(err, task.ErrUnknownQueue) {
			return unknownQueue(c.Context, a, err)
		}
		return err
	}
	if exporter != nil {
		srv, err := serveMetricsReady(c.String(flagMetricsAddr), exporter, a, nil, []string{queue}, metrics.AllReady(a.Ping))
		if err != nil {
			return err
		}
		defer srv.close()
	}
	id := a.Config().WorkerID
	v := h.Version()
	fmt.Fprintf(c.App.Writer, "worker %s running task queue %s with wasm module %s version %d (%s)\n", id, queue, name, v.Version, v.Contract)
	if err := a.Run(c.Context); err != nil && !(c.Context.Err() != nil && onlyCanceled(err)) {
		return fmt.Errorf("worker %s stopped: %s", id, withoutStacks(err))
	}
	_, err = fmt.Fprintf(c.App.Writer, "worker %s stopped\n", id)
	return err
}
