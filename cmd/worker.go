package cmd

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/leatdev/leat/app"
	"github.com/leatdev/leat/executor"
	"github.com/leatdev/leat/metrics"
	"github.com/urfave/cli/v2"
)

// Names of the worker's flags.
const (
	flagProcessors  = "processors"
	flagLockExpiry  = "lock-expiry"
	flagPrefetch    = "prefetch"
	flagReadBlock   = "read-block"
	flagGrace       = "grace"
	flagJoinDelay   = "join-delay"
	flagStart       = "start"
	flagOnError     = "on-error"
	flagRetries     = "retries"
	flagTransient   = "transient-retry"
	flagWorkerID    = "worker-id"
	flagLeaderLease = "leader-lease"
)

// errNoProcessors is the standalone binary's answer to "leat worker".
var errNoProcessors = usageErrorf("worker needs a program that registers processors, and the standalone leat " +
	"binary has none: embed the CLI in your app's binary with cmd.Main(setup) and run its worker command")

func workerCommand(setup Setup) *cli.Command {
	return &cli.Command{
		Name:  "worker",
		Usage: "run the app's processors and background tasks until interrupted",
		Description: "Runs every processor the app registers, or those of --processors, and takes part in\n" +
			"leader election and background tasks. SIGINT or SIGTERM stops it gracefully: in-flight\n" +
			"events finish within the grace period and are acknowledged, and the partitions move\n" +
			"to the other workers at once. A failure that the failure policy turns into a halt\n" +
			"stops the worker the same way and exits with status 1.\n\n" +
			"The other flags set app.Config.Processing (the defaults of every processor), WorkerID\n" +
			"and LeaderLease; a flag not given leaves the value of the app's Setup, then the\n" +
			"default. Options a processor is registered with win over both.\n\n" +
			"--metrics-addr HOST:PORT serves /metrics (Prometheus), /healthz and /readyz while\n" +
			"the worker runs.\n\n" +
			"The worker runs in the app's own binary (cmd.Main with a Setup that registers\n" +
			"processors); the standalone leat binary has none to run.\n\n" +
			"--queue QUEUE --exec COMMAND runs instead the tasks of one task queue in supervised\n" +
			"child processes of COMMAND (any language; see the task package's documentation for\n" +
			"the JSON-lines protocol), also in the standalone binary: the queue's settings come\n" +
			"from Redis. --test-input JSON runs COMMAND once on that payload without Redis and\n" +
			"prints its progress, partial results and result (exit status 1 when it fails).\n\n" +
			"--config FILE runs the handlers a leat.yaml gives its task queues (all of them, or\n" +
			"--queue's), each with the file's settings, cron schedules and environment; --exec (with\n" +
			"--queue), --env, --env-all, --start-timeout, --max-tasks-per-process and --grace\n" +
			"override the file.\n\n" +
			"--server URL (with the pool's token in LEAT_WORKER_TOKEN) registers with a control\n" +
			"plane (leat serve --pools) instead, and runs the queues and deployment it assigns:\n" +
			"no --app, --redis, --queue nor --exec (see docs/control-plane.md).",
		Flags:        workerFlags(),
		HideHelp:     true, // see helpFlag
		OnUsageError: onUsageError,
		Action: func(c *cli.Context) error {
			if c.String(flagServer) != "" {
				return serverWorker(c)
			}
			if c.String(flagConfig) != "" {
				return configWorker(c)
			}
			if c.String(flagWasm) != "" {
				return wasmWorker(c)
			}
			if c.String(flagExec) != "" {
				return execWorker(c)
			}
			if c.String(flagQueue) != "" || c.String(flagTestInput) != "" || len(execEnv(c)) > 0 || c.Bool(flagEnvAll) {
				return usageErrorf("--%s, --%s, --%s and --%s go with --%s", flagQueue, flagTestInput, flagEnv, flagEnvAll, flagExec)
			}
			if setup == nil {
				return errNoProcessors
			}
			if err := wantArgs(c); err != nil {
				return err
			}
			cfg, exporter, err := workerSettings(c)
			if err != nil {
				return err
			}
			names := splitList(c.String(flagProcessors))
			a, err := openAppWith(c, setup, cfg)
			if err != nil {
				return err
			}
			defer a.Close()
			selected, err := selectProcessors(a, names)
			if err != nil {
				return err
			}
			if exporter != nil {
				srv, err := serveMetrics(c.String(flagMetricsAddr), exporter, a, selected)
				if err != nil {
					return err
				}
				defer srv.close()
			}
			id := a.Config().WorkerID
			fmt.Fprintf(c.App.Writer, "worker %s running %d %s: %s\n",
				id, len(selected), plural(len(selected), "processor"), strings.Join(selected, ", "))
			err = a.RunProcessors(c.Context, names)
			if err != nil && !(c.Context.Err() != nil && onlyCanceled(err)) {
				return fmt.Errorf("worker %s stopped: %s", id, withoutStacks(err))
			}
			_, err = fmt.Fprintf(c.App.Writer, "worker %s stopped\n", id)
			return err
		},
	}
}

// processingFlag is one worker flag that sets a field of
// app.Config.Processing: its definition and how its value is applied.
type processingFlag struct {
	flag  cli.Flag
	apply func(c *cli.Context, o *executor.Options) error // a zero value leaves the default
}

func durationOption(name, usage, def string, set func(*executor.Options, time.Duration)) processingFlag {
	return processingFlag{
		flag: &cli.DurationFlag{Name: name, Usage: usage, EnvVars: []string{envName(name)}, DefaultText: def},
		apply: func(c *cli.Context, o *executor.Options) error {
			set(o, c.Duration(name))
			return nil
		},
	}
}

func intOption(name, usage, def string, set func(*executor.Options, int)) processingFlag {
	return processingFlag{
		flag: &cli.IntFlag{Name: name, Usage: usage, EnvVars: []string{envName(name)}, DefaultText: def},
		apply: func(c *cli.Context, o *executor.Options) error {
			set(o, c.Int(name))
			return nil
		},
	}
}

func choiceOption(name, usage, def string, set func(*executor.Options, string) error) processingFlag {
	return processingFlag{
		flag: &cli.StringFlag{Name: name, Usage: usage, EnvVars: []string{envName(name)}, DefaultText: def},
		apply: func(c *cli.Context, o *executor.Options) error {
			if v := c.String(name); v != "" {
				return set(o, v)
			}
			return nil
		},
	}
}

// envName is the environment variable of a flag: LEAT_ and the flag's name
// in capitals, '-' as '_'.
func envName(flag string) string {
	return "LEAT_" + strings.ToUpper(strings.ReplaceAll(flag, "-", "_"))
}

// processingFlags returns the worker flags of app.Config.Processing, one row
// each. (Fresh values every time: urfave/cli flags keep state.)
func processingFlags() []processingFlag {
	return []processingFlag{
		durationOption(flagLockExpiry, "`DURATION` of partition locks and heartbeats (TTL): a crashed worker's partitions move after at most this long",
			executor.DefaultLockExpiry.String(), func(o *executor.Options, d time.Duration) { o.LockExpiry = d }),
		intOption(flagPrefetch, "`N` events buffered per partition, about the most one read of a partition takes",
			fmt.Sprintf("%d events over the stream's partitions, %d to %d each: %d for 16", executor.PrefetchBudget,
				executor.MinDefaultPrefetch, executor.MaxDefaultPrefetch, executor.PrefetchFor(16)),
			func(o *executor.Options, n int) { o.Prefetch = n }),
		durationOption(flagReadBlock, "`DURATION` a read waits for new entries before it checks again",
			executor.DefaultReadBlock.String(), func(o *executor.Options, d time.Duration) { o.ReadBlock = d }),
		durationOption(flagGrace, "`DURATION` in-flight events may take to finish when a partition moves or the worker stops",
			executor.DefaultGrace.String(), func(o *executor.Options, d time.Duration) { o.Grace = d }),
		durationOption(flagJoinDelay, "`DURATION` to wait after joining before the first rebalance, so that workers starting together rebalance once",
			"0s", func(o *executor.Options, d time.Duration) { o.JoinDelay = d }),
		choiceOption(flagStart, "`POSITION` where a processor's new consumer group starts: earliest or latest",
			"earliest", func(o *executor.Options, v string) (err error) { o.Start, err = parsePosition(v); return err }),
		choiceOption(flagOnError, "failure `POLICY`: halt, quarantine, ignore or dead-letter",
			executor.Halt.String(), func(o *executor.Options, v string) (err error) { o.OnError, err = executor.ParsePolicy(v); return err }),
		intOption(flagRetries, "`N` retries of a failing event, in place and with backoff, before the failure policy applies",
			"0", func(o *executor.Options, n int) { o.Retry.Attempts = n }),
		choiceOption(flagTransient, "`DURATION` for which a processor failing with a transient Redis error (connection lost, "+
			"timeout, LOADING, READONLY, CLUSTERDOWN, ...) is retried in place, before --retries and the failure policy; off turns it off",
			executor.DefaultTransientFor.String(), parseTransient),
	}
}

// parseTransient parses the --transient-retry of a worker: a positive
// duration, or off.
func parseTransient(o *executor.Options, v string) error {
	if v == "off" {
		o.Transient.Off = true
		return nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		return fmt.Errorf("%q: want a positive duration such as 30s or 2m, or off", v)
	}
	o.Transient.For = d
	return nil
}

func workerFlags() []cli.Flag {
	flags := []cli.Flag{
		&cli.StringFlag{
			Name:        flagProcessors,
			Usage:       "comma-separated processors to run, each `NAME` or STREAM/NAME",
			EnvVars:     []string{envName(flagProcessors)},
			DefaultText: "all the app registers",
		},
	}
	for _, f := range processingFlags() {
		flags = append(flags, f.flag)
	}
	flags = append(flags,
		&cli.StringFlag{
			Name:        flagWorkerID,
			Usage:       "`ID` naming this worker in leadership, logs and inspect",
			EnvVars:     []string{envName(flagWorkerID)},
			DefaultText: "host name, process ID and a random suffix",
		},
		&cli.DurationFlag{
			Name:        flagLeaderLease,
			Usage:       "`DURATION` of the leader lease (TTL): a crashed leader is replaced after at most this long",
			EnvVars:     []string{envName(flagLeaderLease)},
			DefaultText: app.DefaultLeaderLease.String(),
		},
		metricsAddrFlag(),
		helpFlag(),
	)
	return append(append(append(append(flags, execFlags()...), configFlag()), serverFlags()...), wasmFlags()...)
}

// workerConfig sets the fields of cfg that the worker's flags map to. A flag
// not given (or given as zero) leaves its field zero: the default. Each flag
// is checked on its own with the executor's validation, so an error names
// the flag.
func workerConfig(c *cli.Context, cfg *app.Config) error {
	var o executor.Options
	var errs []error
	for _, f := range processingFlags() {
		name := f.flag.Names()[0]
		var one executor.Options
		err := f.apply(c, &one)
		if err == nil {
			_, err = one.WithDefaults()
		}
		if err != nil {
			errs = append(errs, usageErrorf("--%s: %w", name, err))
			continue
		}
		_ = f.apply(c, &o)
	}
	if err := errors.Join(errs...); err != nil {
		return usageError{err}
	}
	cfg.Processing = o

	if id := c.String(flagWorkerID); id != "" {
		if strings.TrimSpace(id) != id || strings.ContainsAny(id, "\r\n") {
			return usageErrorf("--%s %q: no surrounding spaces or line breaks", flagWorkerID, id)
		}
		cfg.WorkerID = id
	}
	if d := c.Duration(flagLeaderLease); d != 0 {
		// The app's own validation decides; New does no I/O.
		probe, err := app.New(app.Config{Name: cfg.Name, RedisURL: cfg.RedisURL, TLS: cfg.TLS, KeyPrefix: cfg.KeyPrefix, LeaderLease: d})
		if err != nil {
			return usageErrorf("--%s: %w", flagLeaderLease, err)
		}
		probe.Close()
		cfg.LeaderLease = d
	}
	return nil
}

// parsePosition parses the --start of a worker.
func parsePosition(s string) (executor.Position, error) {
	switch s {
	case "earliest":
		return executor.Earliest, nil
	case "latest":
		return executor.Latest, nil
	}
	return 0, fmt.Errorf("unknown start position %q (want earliest or latest)", s)
}

// splitList splits a comma-separated list, dropping blanks.
func splitList(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

// selectProcessors returns the full names (stream/processor) of the
// processors that names select among those a registers (all when names is
// empty), or a usage error naming the known ones.
func selectProcessors(a *app.App, names []string) ([]string, error) {
	if len(a.Processors()) == 0 {
		return nil, usageErrorf("app %q registers no processors: register them with app.Process in its Setup", a.Name())
	}
	procs, err := a.SelectProcessors(names)
	if err != nil {
		return nil, usageError{err}
	}
	out := make([]string, len(procs))
	for i, p := range procs {
		out[i] = p.FullName()
	}
	return out, nil
}

// onlyCanceled reports whether err is context.Canceled, or joins only
// errors that are: executors interrupted while starting up report it,
// though stopping then is no failure.
func onlyCanceled(err error) bool {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		for _, e := range j.Unwrap() {
			if !onlyCanceled(e) {
				return false
			}
		}
		return true
	}
	return errors.Is(err, context.Canceled)
}

// withoutStacks returns err's message without the stacks of recovered
// panics, which the logs carry.
func withoutStacks(err error) string {
	msg := err.Error()
	var walk func(error)
	walk = func(e error) {
		if pe, ok := e.(*executor.PanicError); ok && len(pe.Stack) > 0 {
			msg = strings.ReplaceAll(msg, "\n"+string(pe.Stack), " (stack in the logs)")
		}
		switch u := e.(type) {
		case interface{ Unwrap() error }:
			walk(u.Unwrap())
		case interface{ Unwrap() []error }:
			for _, x := range u.Unwrap() {
				walk(x)
			}
		}
	}
	walk(err)
	return msg
}

// workerSettings returns the app configuration of a worker command (the
// global flags, then the worker's), with the Prometheus exporter among its
// hooks when --metrics-addr is given.
func workerSettings(c *cli.Context) (app.Config, *metrics.Exporter, error) {
	cfg, err := config(c)
	if err != nil {
		return cfg, nil, err
	}
	if err := workerConfig(c, &cfg); err != nil {
		return cfg, nil, err
	}
	addr := c.String(flagMetricsAddr)
	if addr == "" {
		return cfg, nil, nil
	}
	if err := checkMetricsAddr(addr); err != nil {
		return cfg, nil, err
	}
	exporter, err := metrics.New(metrics.Config{})
	if err != nil {
		return cfg, nil, err
	}
	cfg.Hooks = append(cfg.Hooks, exporter)
	return cfg, exporter, nil
}
