package cmd

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/leatdev/leat/app"
	leatconfig "github.com/leatdev/leat/config"
	"github.com/leatdev/leat/metrics"
	"github.com/leatdev/leat/task"
	"github.com/leatdev/leat/task/subprocess"
	"github.com/leatdev/leat/task/wasm"
	"github.com/urfave/cli/v2"
)

// flagConfig names the worker's configuration file.
const flagConfig = "config"

func configFlag() cli.Flag {
	return &cli.StringFlag{
		Name:    flagConfig,
		Usage:   "run the handlers of the task queues of this `FILE` (leat.yaml), each queue with its settings and cron schedules",
		EnvVars: []string{envName(flagConfig)},
	}
}

// configWorker runs "leat worker --config FILE": a worker of the file's
// task queues that have a handler (or of --queue alone), each run as the
// file says. The flags that still make sense override the file: --exec
// (with --queue) the command, --env adds to each handler's environment
// (winning over the file's entries of the same name), --env-all,
// --start-timeout, --max-tasks-per-process, --grace and the global
// --max-concurrency.
func configWorker(c *cli.Context) error {
	if err := wantArgs(c); err != nil {
		return err
	}
	switch {
	case c.String(flagProcessors) != "":
		return usageErrorf("--%s runs task queues: it takes no --%s", flagConfig, flagProcessors)
	case c.String(flagTestInput) != "":
		return usageErrorf("--%s goes with --%s, not --%s", flagTestInput, flagExec, flagConfig)
	case c.String(flagExec) != "" && c.String(flagQueue) == "":
		return usageErrorf("with --%s, --%s needs --%s: the queue whose command it replaces", flagConfig, flagExec, flagQueue)
	}
	f, err := loadConfigFile(c, c.String(flagConfig))
	if err != nil {
		return err
	}
	queues, err := configQueues(c, f)
	if err != nil {
		return err
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
	var exes []*subprocess.Handler
	var modules []*wasm.Handler
	defer func() {
		for _, ex := range exes {
			ex.Close()
		}
		for _, h := range modules {
			_ = h.Close(context.Background())
		}
	}()
	var names, lines []string
	for _, q := range queues {
		var opts []task.Option
		if g := c.Duration(flagGrace); g > 0 {
			opts = append(opts, task.Grace(g))
		}
		var handle func(context.Context, *task.Task[json.RawMessage]) (json.RawMessage, error)
		var line string
		switch q.Handler.Kind {
		case leatconfig.WasmHandler:
			h, err := configWasm(c, a, f, q)
			if err != nil {
				return err
			}
			modules = append(modules, h)
			handle = h.Handle
			v := h.Version()
			line = fmt.Sprintf("%s with wasm module %s version %d (%s)", q.Name, q.Handler.Wasm.Module, v.Version, v.Contract)
		default:
			x := q.Handler.Exec
			command := x.Command
			if e := c.String(flagExec); e != "" {
				command = e
			}
			start := x.StartTimeout
			if c.IsSet(flagStartTimeout) {
				start = c.Duration(flagStartTimeout)
			}
			perProcess := x.MaxTasksPerProcess
			if c.IsSet(flagMaxTasks) {
				perProcess = c.Int(flagMaxTasks)
			}
			ex, err := subprocess.New(subprocess.Config{
				Command: execCommand(command), Dir: f.Dir(x), Env: mergeEnv(x.Env, execEnv(c)),
				InheritEnv: x.InheritEnv || c.Bool(flagEnvAll), StartTimeout: start, Logger: a.Logger().With("queue", q.Name),
				MaxTasksPerProcess: perProcess,
			})
			if err != nil {
				return usageErrorf("%s: queue %s: %w", f.Path, q.Name, err)
			}
			exes = append(exes, ex)
			opts = append(opts, execOptions(ex)...) // as with --exec
			handle = ex.Handle
			line = q.Name + " with: " + command
		}
		if _, err := leatconfig.Handle(a, f, q.Name, handle, opts...); err != nil {
			return err
		}
		names = append(names, q.Name)
		lines = append(lines, line)
	}
	if exporter != nil {
		ready := metrics.AllReady(a.Ping, func(context.Context) error {
			var errs []error
			for _, ex := range exes {
				errs = append(errs, ex.Ready())
			}
			return errors.Join(errs...)
		})
		srv, err := serveMetricsReady(c.String(flagMetricsAddr), exporter, a, nil, names, ready)
		if err != nil {
			return err
		}
		defer srv.close()
	}
	id := a.Config().WorkerID
	fmt.Fprintf(c.App.Writer, "worker %s running %s %s\n", id, plural(len(names), "task queue"), strings.Join(lines, "; "))
	if err := a.Run(c.Context); err != nil && !(c.Context.Err() != nil && onlyCanceled(err)) {
		return fmt.Errorf("worker %s stopped: %s", id, withoutStacks(err))
	}
	_, err = fmt.Fprintf(c.App.Writer, "worker %s stopped\n", id)
	return err
}

// configQueues returns the queues of f a --config worker runs: --queue
// alone, or every queue with a handler.
func configQueues(c *cli.Context, f *leatconfig.File) ([]*leatconfig.Queue, error) {
	if name := c.String(flagQueue); name != "" {
		q := f.Queue(name)
		switch {
		case q == nil:
			return nil, usageErrorf("%s has no task queue %q", f.Path, name)
		case q.Handler.Kind == leatconfig.NoHandler && c.String(flagExec) != "":
			q.Handler = leatconfig.Handler{Kind: leatconfig.ExecHandler, Exec: &leatconfig.Exec{}}
		case q.Handler.Kind == leatconfig.WasmHandler && c.String(flagExec) != "":
			return nil, usageErrorf("%s runs task queue %q with a wasm module: --%s replaces exec commands only", f.Path, name, flagExec)
		case q.Handler.Kind == leatconfig.NoHandler:
			return nil, usageErrorf("%s gives task queue %q no handler: add one (handler: exec: command: ...) or give --%s", f.Path, name, flagExec)
		}
		return []*leatconfig.Queue{q}, nil
	}
	var out []*leatconfig.Queue
	for i := range f.Queues {
		if f.Queues[i].Handler.Kind != leatconfig.NoHandler {
			out = append(out, &f.Queues[i])
		}
	}
	if len(out) == 0 {
		return nil, usageErrorf("%s gives no task queue a handler (handler: exec: command: ... or handler: wasm: MODULE)", f.Path)
	}
	return out, nil
}

// mergeEnv returns the file's environment entries with the flags' after
// them, an entry of the flags replacing the file's of the same name.
func mergeEnv(file, flags []string) []string {
	name := func(v string) string { n, _, _ := strings.Cut(v, "="); return n }
	var out []string
	for _, v := range file {
		replaced := false
		for _, w := range flags {
			replaced = replaced || name(w) == name(v)
		}
		if !replaced {
			out = append(out, v)
		}
	}
	return append(out, flags...)
}

// configWasm returns the WebAssembly handler the file gives queue q, its
// module loaded from the app's registry (compiled once, cached under
// --wasm-cache-dir).
func configWasm(c *cli.Context, a *app.App, f *leatconfig.File, q *leatconfig.Queue) (*wasm.Handler, error) {
	w := q.Handler.Wasm
	env, err := passEnv(mergeEnv(w.Env, execEnv(c)))
	if err != nil {
		return nil, usageErrorf("%s: queue %s: %w", f.Path, q.Name, err)
	}
	cache := c.String(flagWasmCache)
	h, err := wasm.New(c.Context, wasm.Config{
		Registry: wasm.NewRegistry(a, cache), Name: w.Module, CacheDir: cache, Pool: w.Pool,
		Sandbox: wasm.Sandbox{
			MemoryPages: w.MemoryPages, Dir: f.WasmDir(w), ReadOnly: w.ReadOnly, Env: env, Deterministic: w.Deterministic,
		},
		Logger: a.Logger().With("queue", q.Name),
	})
	if errors.Is(err, wasm.ErrNotFound) {
		return nil, usageErrorf("%s: queue %s: %w (store it with leat wasm put %s FILE)", f.Path, q.Name, err, w.Module)
	}
	return h, err
}
