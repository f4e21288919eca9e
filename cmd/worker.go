package cmd

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/leatdev/leat/app"
	"github.com/leatdev/leat/executor"
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
			"The worker runs in the app's own binary (cmd.Main with a Setup that registers\n" +
			"processors); the standalone leat binary has none to run.",
		Flags:        workerFlags(),
		HideHelp:     true, // see helpFlag
		OnUsageError: onUsageError,
		Action: func(c *cli.Context) error {
			if setup == nil {
				return errNoProcessors
			}
			if err := wantArgs(c); err != nil {
				return err
			}
			cfg, err := config(c)
			if err != nil {
				return err
			}
			if err := workerConfig(c, &cfg); err != nil {
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

func workerFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{
			Name:        flagProcessors,
			Usage:       "comma-separated processors to run, each `NAME` or STREAM/NAME",
			EnvVars:     []string{"LEAT_PROCESSORS"},
			DefaultText: "all the app registers",
		},
		&cli.DurationFlag{
			Name:        flagLockExpiry,
			Usage:       "`DURATION` of partition locks and heartbeats (TTL): a crashed worker's partitions move after at most this long",
			EnvVars:     []string{"LEAT_LOCK_EXPIRY"},
			DefaultText: executor.DefaultLockExpiry.String(),
		},
		&cli.IntFlag{
			Name:        flagPrefetch,
			Usage:       "`N` events buffered per partition",
			EnvVars:     []string{"LEAT_PREFETCH"},
			DefaultText: fmt.Sprint(executor.DefaultPrefetch),
		},
		&cli.DurationFlag{
			Name:        flagReadBlock,
			Usage:       "`DURATION` a read waits for new entries before it checks again",
			EnvVars:     []string{"LEAT_READ_BLOCK"},
			DefaultText: executor.DefaultReadBlock.String(),
		},
		&cli.DurationFlag{
			Name:        flagGrace,
			Usage:       "`DURATION` in-flight events may take to finish when a partition moves or the worker stops",
			EnvVars:     []string{"LEAT_GRACE"},
			DefaultText: executor.DefaultGrace.String(),
		},
		&cli.DurationFlag{
			Name:        flagJoinDelay,
			Usage:       "`DURATION` to wait after joining before the first rebalance, so that workers starting together rebalance once",
			EnvVars:     []string{"LEAT_JOIN_DELAY"},
			DefaultText: "0s",
		},
		&cli.StringFlag{
			Name:        flagStart,
			Usage:       "`POSITION` where a processor's new consumer group starts: earliest or latest",
			EnvVars:     []string{"LEAT_START"},
			DefaultText: "earliest",
		},
		&cli.StringFlag{
			Name:        flagOnError,
			Usage:       "failure `POLICY`: halt, quarantine, ignore or dead-letter",
			EnvVars:     []string{"LEAT_ON_ERROR"},
			DefaultText: executor.Halt.String(),
		},
		&cli.IntFlag{
			Name:        flagRetries,
			Usage:       "`N` retries of a failing event, in place and with backoff, before the failure policy applies",
			EnvVars:     []string{"LEAT_RETRIES"},
			DefaultText: "0",
		},
		&cli.StringFlag{
			Name:        flagWorkerID,
			Usage:       "`ID` naming this worker in leadership, logs and inspect",
			EnvVars:     []string{"LEAT_WORKER_ID"},
			DefaultText: "host name, process ID and a random suffix",
		},
		&cli.DurationFlag{
			Name:        flagLeaderLease,
			Usage:       "`DURATION` of the leader lease (TTL): a crashed leader is replaced after at most this long",
			EnvVars:     []string{"LEAT_LEADER_LEASE"},
			DefaultText: app.DefaultLeaderLease.String(),
		},
		helpFlag(),
	}
}

// workerConfig sets the fields of cfg that the worker's flags map to. A flag
// not given (or given as zero) leaves its field zero: the default.
func workerConfig(c *cli.Context, cfg *app.Config) error {
	var o executor.Options
	// Each flag is checked on its own with the executor's own validation,
	// so that an error names the flag.
	check := func(flag string, set func(*executor.Options)) error {
		var one executor.Options
		set(&one)
		if _, err := one.WithDefaults(); err != nil {
			return usageErrorf("--%s: %w", flag, err)
		}
		set(&o)
		return nil
	}
	var errs []error
	errs = append(errs,
		check(flagLockExpiry, func(o *executor.Options) { o.LockExpiry = c.Duration(flagLockExpiry) }),
		check(flagPrefetch, func(o *executor.Options) { o.Prefetch = c.Int(flagPrefetch) }),
		check(flagReadBlock, func(o *executor.Options) { o.ReadBlock = c.Duration(flagReadBlock) }),
		check(flagGrace, func(o *executor.Options) { o.Grace = c.Duration(flagGrace) }),
		check(flagJoinDelay, func(o *executor.Options) { o.JoinDelay = c.Duration(flagJoinDelay) }),
	)
	if s := c.String(flagStart); s != "" {
		p, err := parsePosition(s)
		if err != nil {
			errs = append(errs, usageErrorf("--%s: %w", flagStart, err))
		}
		o.Start = p
	}
	if s := c.String(flagOnError); s != "" {
		p, err := executor.ParsePolicy(s)
		if err != nil {
			errs = append(errs, usageErrorf("--%s: %w", flagOnError, err))
		}
		o.OnError = p
	}
	if n := c.Int(flagRetries); n < 0 {
		errs = append(errs, usageErrorf("--%s %d: want 0 or more", flagRetries, n))
	} else {
		o.Retry.Attempts = n
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
		probe, err := app.New(app.Config{Name: cfg.Name, RedisURL: cfg.RedisURL, KeyPrefix: cfg.KeyPrefix, LeaderLease: d})
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
