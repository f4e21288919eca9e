package cmd

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"

	"github.com/leatdev/leat/metrics"
	"github.com/leatdev/leat/task"
	"github.com/leatdev/leat/task/subprocess"
	"github.com/urfave/cli/v2"
)

// Names of the flags of a worker running a subprocess handler.
const (
	flagQueue        = "queue"
	flagExec         = "exec"
	flagTestInput    = "test-input"
	flagStartTimeout = "start-timeout"
	flagEnv          = "env"
	flagEnvAll       = "env-all"
	flagMaxTasks     = "max-tasks-per-process"
)

// envList is the value of a repeatable --env: each value whole, commas
// included.
type envList []string

func (l *envList) Set(v string) error { *l = append(*l, v); return nil }
func (l *envList) String() string     { return strings.Join(*l, " ") }

// execEnv returns the --env values of c.
func execEnv(c *cli.Context) []string {
	if l, ok := c.Generic(flagEnv).(*envList); ok {
		return *l
	}
	return nil
}

func execFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{
			Name:    flagQueue,
			Usage:   "task `QUEUE` to run with --exec (as recorded in Redis by the program that declared it)",
			EnvVars: []string{envName(flagQueue)},
		},
		&cli.StringFlag{
			Name:    flagExec,
			Usage:   "run the tasks of --queue in child processes of `COMMAND` (run by /bin/sh) speaking leat's JSON-lines protocol",
			EnvVars: []string{envName(flagExec)},
		},
		&cli.StringFlag{
			Name:  flagTestInput,
			Usage: "with --exec, run the handler once on this `JSON` payload, without Redis, and print its updates and result",
		},
		&cli.GenericFlag{
			Name: flagEnv,
			Usage: "with --exec, pass the worker's variable `NAME` on to the handler, or set NAME=VALUE (repeatable); the handler " +
				"inherits only PATH, HOME, USER, LANG, LC_*, TZ, TMPDIR, PYTHON*, VIRTUAL_ENV and a few more, never a LEAT_ variable",
			Value: &envList{},
		},
		&cli.BoolFlag{
			Name:    flagEnvAll,
			Usage:   "with --exec, pass the worker's whole environment on to the handler but its LEAT_ variables (Redis URL, tokens, TLS)",
			EnvVars: []string{envName(flagEnvAll)},
		},
		&cli.DurationFlag{
			Name:        flagStartTimeout,
			Usage:       "`DURATION` a handler process may take to say it is ready before it is killed and restarted",
			EnvVars:     []string{envName(flagStartTimeout)},
			DefaultText: subprocess.DefaultStartTimeout.String(),
		},
		&cli.IntFlag{
			Name:    flagMaxTasks,
			Usage:   "with --exec, replace a handler process once it answered `N` tasks (0: never), for a handler that leaks memory",
			EnvVars: []string{envName(flagMaxTasks)},
		},
	}
}

// execOptions are the options of a queue run by ex: no task is fetched
// while no handler process is ready (the tasks stay with the queue for the
// other workers; the wait starts a process ahead of the first task, which
// makes the worker ready), and the handler may lower its concurrency with
// a concurrency line.
func execOptions(ex *subprocess.Handler) []task.Option {
	return []task.Option{task.FetchWhen(ex.Wait), task.ConcurrencyFunc(ex.Concurrency)}
}

// execCommand is the argv of a --exec command line.
func execCommand(line string) []string { return []string{"/bin/sh", "-c", "exec " + line} }

// execWorker runs "leat worker --exec": a worker of one task queue whose
// handler is a subprocess, or with --test-input one local run of it.
func execWorker(c *cli.Context) error {
	if err := wantArgs(c); err != nil {
		return err
	}
	line := c.String(flagExec)
	if input := c.String(flagTestInput); input != "" {
		return execOnce(c, line, input)
	}
	queue := c.String(flagQueue)
	if queue == "" {
		return usageErrorf("--%s needs --%s, the task queue to run", flagExec, flagQueue)
	}
	if c.String(flagProcessors) != "" {
		return usageErrorf("--%s runs one task queue: it takes no --%s", flagExec, flagProcessors)
	}
	cfg, exporter, err := workerSettings(c)
	if err != nil {
		return err
	}
	// A bare app: the processors and queues of the app's own Setup, if
	// any, are not this worker's.
	a, err := openAppWith(c, nil, cfg)
	if err != nil {
		return err
	}
	defer a.Close()
	ex, err := subprocess.New(subprocess.Config{
		Command: execCommand(line), StartTimeout: c.Duration(flagStartTimeout), Logger: a.Logger().With("queue", queue),
		Env: execEnv(c), InheritEnv: c.Bool(flagEnvAll), MaxTasksPerProcess: c.Int(flagMaxTasks),
	})
	if err != nil {
		return usageErrorf("--%s: %w", flagExec, err)
	}
	defer ex.Close()
	opts := execOptions(ex)
	if g := c.Duration(flagGrace); g > 0 {
		opts = append(opts, task.Grace(g))
	}
	if _, err := task.HandleLookup(c.Context, a, queue, ex.Handle, opts...); err != nil {
		if errors.Is(err, task.ErrUnknownQueue) {
			return unknownQueue(c.Context, a, err)
		}
		return err
	}
	if exporter != nil {
		// Ready while Redis answers and a handler process is ready.
		ready := metrics.AllReady(a.Ping, func(context.Context) error { return ex.Ready() })
		srv, err := serveMetricsReady(c.String(flagMetricsAddr), exporter, a, nil, []string{queue}, ready)
		if err != nil {
			return err
		}
		defer srv.close()
	}
	id := a.Config().WorkerID
	fmt.Fprintf(c.App.Writer, "worker %s running task queue %s with: %s\n", id, queue, line)
	if err := a.Run(c.Context); err != nil && !(c.Context.Err() != nil && onlyCanceled(err)) {
		return fmt.Errorf("worker %s stopped: %s", id, withoutStacks(err))
	}
	_, err = fmt.Fprintf(c.App.Writer, "worker %s stopped\n", id)
	return err
}

// execOnce runs the handler once on input without Redis: it prints each
// update as "progress JSON" or "partial JSON", then "result JSON", and
// fails with the handler's error. A handler that does not become ready is
// not restarted: the error says why, with its last stderr lines.
func execOnce(c *cli.Context, line, input string) error {
	if !json.Valid([]byte(input)) {
		return usageErrorf("--%s is not JSON: %.80s", flagTestInput, input)
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(c.String(flagLogLevel))); err != nil {
		return usageErrorf("--log-level %q is invalid: use debug, info, warn or error", c.String(flagLogLevel))
	}
	// The handler's stderr lines are logged at info: show them.
	level = min(level, slog.LevelInfo)
	ex, err := subprocess.New(subprocess.Config{
		Command: execCommand(line), StartTimeout: c.Duration(flagStartTimeout),
		Env: execEnv(c), InheritEnv: c.Bool(flagEnvAll),
		Logger: slog.New(slog.NewTextHandler(c.App.ErrWriter, &slog.HandlerOptions{Level: level})),
	})
	if err != nil {
		return usageErrorf("--%s: %w", flagExec, err)
	}
	defer ex.Close()
	res, err := ex.RunOnce(c.Context, "local", json.RawMessage(input), func(kind string, data json.RawMessage) {
		fmt.Fprintf(c.App.Writer, "%s %s\n", kind, data)
	})
	if err != nil {
		return fmt.Errorf("handler failed: %w", err)
	}
	_, err = fmt.Fprintf(c.App.Writer, "result %s\n", res)
	return err
}

// followTask prints the updates of a task as they come, in order, then its
// result; it fails when the task did not succeed.
func followTask(c *cli.Context, q *rawQueue, id string) error {
	enc := json.NewEncoder(c.App.Writer)
	for u, err := range q.Follow(c.Context, id) {
		if err != nil {
			return err
		}
		if c.Bool(flagJSON) {
			if err := enc.Encode(u); err != nil {
				return err
			}
		} else if u.Kind != task.KindDone {
			fmt.Fprintf(c.App.Writer, "%s %s\n", u.Kind, quoteTerm(string(u.Data)))
		} else if u.Info.State == task.Succeeded {
			fmt.Fprintf(c.App.Writer, "result %s\n", quoteTerm(string(u.Info.Result)))
		}
		if u.Kind == task.KindDone && u.Info.State != task.Succeeded {
			return fmt.Errorf("task %s is %s: %s", id, u.Info.State, quoteTerm(u.Info.Error))
		}
	}
	return nil
}
