package cmd

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/leatdev/leat/app"
	"github.com/leatdev/leat/internal/rdb"
	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/logging"
	"github.com/urfave/cli/v2"
)

// Setup builds the user's App from the configuration the CLI assembled from
// flags and environment; the user declares streams and registers processors
// and background tasks on it. The CLI closes the App when the command ends.
//
// cfg holds what the flags and environment set, and zero values elsewhere.
// For "leat worker" that includes cfg.Processing, cfg.WorkerID and
// cfg.LeaderLease, with zero fields for the flags not given; a Setup that
// has defaults of its own should fill only the zero fields, so that flags
// win over them:
//
//	cfg.Processing = cfg.Processing.Merge(executor.Options{Grace: 30 * time.Second})
type Setup func(cfg app.Config) (*app.App, error)

// pingTimeout bounds the first contact with Redis, so that an unreachable
// server fails a command quickly.
const pingTimeout = 5 * time.Second

// Names of the global flags.
const (
	flagRedis    = "redis"
	flagCluster  = "cluster"
	flagApp      = "app"
	flagPrefix   = "prefix"
	flagLogLevel = "log-level"
	flagVersion  = "version"
)

// New returns the CLI; setup nil means the standalone binary (an App with no
// declarations; streams come from the registry in Redis).
//
// The returned cli.App does not print errors: its Run returns them. Use Run
// or Main to report them as one line and get the exit status.
func New(setup Setup) *cli.App {
	return &cli.App{
		Name:  "leat",
		Usage: "run workers of a leat app and send records to its partitioned streams in Redis",
		Flags: withTLSFlags(append([]cli.Flag{
			&cli.StringFlag{
				Name: flagRedis,
				Usage: "Redis server: redis://[user:password@]host:port[/db], rediss:// for TLS, unix:///path; " +
					"a Redis Sentinel: redis://[user:password@]sentinel:port?master_name=NAME[&addr=sentinel2:port]; " +
					"set LEAT_REDIS_URL rather than this flag when the URL holds a password (flags show in ps)",
				Value:       app.DefaultRedisURL,
				DefaultText: app.DefaultRedisURL, // help never shows a URL with a password from the environment
				EnvVars:     []string{"LEAT_REDIS_URL"},
			},
			&cli.BoolFlag{
				Name: flagCluster,
				Usage: "--redis names a node of a Redis Cluster: talk to the whole cluster through it " +
					"(implied by a URL with ?addr=HOST:PORT parameters naming more nodes)",
				EnvVars:            []string{"LEAT_REDIS_CLUSTER"},
				DisableDefaultText: true,
			},
			&cli.StringFlag{
				Name:    flagApp,
				Usage:   "name of the app whose streams to use (required by commands that touch an app)",
				EnvVars: []string{"LEAT_APP"},
			},
			&cli.StringFlag{
				Name:    flagPrefix,
				Usage:   "prefix of the app's Redis keys",
				Value:   rdb.DefaultPrefix,
				EnvVars: []string{"LEAT_PREFIX"},
			},
			&cli.StringFlag{
				Name:    flagLogLevel,
				Usage:   "level of the logs written to stderr: debug, info, warn or error",
				Value:   "warn",
				EnvVars: []string{"LEAT_LOG_LEVEL"},
			},
			helpFlag(),
			&cli.BoolFlag{Name: flagVersion, Usage: "print the version and exit", DisableDefaultText: true},
		}, taskLimitFlags()...)),
		Commands: []*cli.Command{
			sendCommand(setup), sendManyCommand(setup), workerCommand(setup), resetCommand(setup), inspectCommand(setup), tableCommand(setup), benchCommand(),
			enqueueCommand(setup), tasksCommand(setup), flowsCommand(setup), deadCommand(setup), serveCommand(setup), applyCommand(), configCommand(setup),
			wasmCommand(setup), completionCommand(), referenceCommand(),
		},
		// "leat ... --generate-bash-completion" lists what may come next, for
		// the scripts of "leat completion".
		EnableBashCompletion: true,
		Action:               rootAction,
		OnUsageError:         onUsageError,
		// Run reports errors; urfave/cli must neither print them nor exit.
		ExitErrHandler: func(*cli.Context, error) {},
		// Each App and command carries its own help flag: see helpFlag.
		HideHelp:    true,
		HideVersion: true,
		// Header values may contain commas.
		DisableSliceFlagSeparator: true,
	}
}

// Main runs New(setup) on os.Args with a context cancelled by SIGINT or
// SIGTERM and exits with the command's status. It silences go-redis's
// process-wide logger, whose retry messages on stderr would repeat the one
// line the command reports.
func Main(setup Setup) {
	redis.SetLogger(&logging.VoidLogger{})
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	status := runInterruptible(sigs, func() { signal.Stop(sigs) }, func(ctx context.Context) int {
		return Run(ctx, setup, os.Args, os.Stdin, os.Stdout, os.Stderr)
	})
	os.Exit(status)
}

// runInterruptible runs command with a context cancelled by the first
// signal from sigs; restore then gives the signals their default handling,
// so that a second one ends the process at once. A command that stops
// cleanly on the signal (a worker's or a server's graceful stop) exits with
// its own status; one that did not finish what it was asked exits
// 128+signal, 130 for SIGINT and 143 for SIGTERM, as shells report an
// interrupted program.
func runInterruptible(sigs <-chan os.Signal, restore func(), command func(context.Context) int) int {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	caught := make(chan os.Signal, 1)
	go func() {
		select {
		case s := <-sigs:
			caught <- s
			restore()
			cancel()
		case <-ctx.Done():
		}
	}()
	status := command(ctx)
	select {
	case s := <-caught:
		if n, ok := s.(syscall.Signal); ok && status != exitOK {
			return 128 + int(n)
		}
	default:
	}
	return status
}

// Run is Main without os.Exit, for tests and embedding: it runs the command
// of args (which starts with the program name, like os.Args) with the given
// input and outputs, writes any error to stderr as one line, and returns the
// exit status: 0 on success, 1 on runtime failures (Redis unreachable or
// failing), 2 on usage errors and bad input.
func Run(ctx context.Context, setup Setup, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	a := New(setup)
	a.Reader, a.Writer, a.ErrWriter = stdin, stdout, stderr
	return report(stderr, a.RunContext(ctx, interspersed(a, args)))
}

// helpFlag returns a new --help flag. urfave/cli's own, cli.HelpFlag, is one
// value shared by every App and written to whenever a command parses its
// flags, a data race when Apps run concurrently (tests, embedding); so App and
// commands set HideHelp and carry their own. cli still shows the help when a
// flag named "help" is set.
func helpFlag() cli.Flag {
	return &cli.BoolFlag{Name: "help", Aliases: []string{"h"}, Usage: "show help", DisableDefaultText: true}
}

// rootAction runs when no command is given: it shows the help, or rejects an
// unknown command.
//
// "leat help [COMMAND]" shows the help of the app or of COMMAND, and
// "leat --version" the version.
func rootAction(c *cli.Context) error {
	if c.Bool(flagVersion) {
		_, err := fmt.Fprintln(c.App.Writer, c.App.Name, version())
		return err
	}
	if c.Args().First() == "help" {
		switch name := c.Args().Get(1); {
		case c.NArg() > 2:
			return usageErrorf("help: want at most one command, got %d", c.NArg()-1)
		case name == "":
			return cli.ShowAppHelp(c)
		case c.App.Command(name) != nil:
			return cli.ShowCommandHelp(c, name)
		default:
			return usageErrorf("help: unknown command %q (see %s --help)", name, c.App.Name)
		}
	}
	if c.Args().Present() {
		if isGlobalFlag(c.Args().First()) {
			return usageErrorf("%s is a global flag: put it with its value before the command", c.Args().First())
		}
		return usageErrorf("unknown command %q (see %s --help)", c.Args().First(), c.App.Name)
	}
	return cli.ShowAppHelp(c)
}

// wantArgs checks that the command got exactly the arguments named.
func wantArgs(c *cli.Context, names ...string) error {
	if c.NArg() == len(names) {
		return nil
	}
	hint := ""
	for _, a := range c.Args().Slice() {
		if strings.HasPrefix(a, "-") && len(a) > 1 {
			if isGlobalFlag(a) {
				return globalFlagError(c.App.Name, c.Command.Name, a)
			}
			name, _, _ := strings.Cut(a, "=")
			hint = fmt.Sprintf("; %s is not a flag of this command", name)
			break
		}
	}
	// the command as typed: "tasks list", not "list"
	var words []string
	for _, l := range c.Lineage() {
		if l.Command != nil && l.Command.Name != "" && l.Command.Name != c.App.Name && (len(words) == 0 || words[0] != l.Command.Name) {
			words = append([]string{l.Command.Name}, words...)
		}
	}
	path := strings.Join(words, " ")
	if len(names) == 0 {
		return usageErrorf("%s: want no arguments, got %d%s (see %s %s --help)",
			c.Command.Name, c.NArg(), hint, c.App.Name, path)
	}
	return usageErrorf("%s: want %s, %s, got %d%s (see %s %s --help)",
		c.Command.Name, fmt.Sprintf("%d %s", len(names), plural(len(names), "argument")), strings.Join(names, " "), c.NArg(), hint, c.App.Name, path)
}

// config assembles the app configuration from the global flags.
func config(c *cli.Context) (app.Config, error) {
	name := c.String(flagApp)
	if name == "" {
		var err error
		if name, err = appOfDir(); err != nil {
			return app.Config{}, err
		}
	}
	if err := rdb.CheckName("app", name); err != nil {
		return app.Config{}, usageErrorf("--app: %w", err)
	}
	prefix := c.String(flagPrefix)
	if !rdb.ValidPrefix(prefix) {
		return app.Config{}, usageErrorf("--prefix %q is invalid: use 1 to 128 letters, digits, '_', '.', '-' or ':'", prefix)
	}
	redisURL := c.String(flagRedis)
	if err := checkURL(redisURL, c.Bool(flagCluster)); err != nil {
		return app.Config{}, err
	}
	tlsCfg, err := tlsConfig(c, redisURL)
	if err != nil {
		return app.Config{}, err
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(c.String(flagLogLevel))); err != nil {
		return app.Config{}, usageErrorf("--log-level %q is invalid: use debug, info, warn or error", c.String(flagLogLevel))
	}
	cfg := app.Config{
		Name:      name,
		RedisURL:  redisURL,
		Cluster:   c.Bool(flagCluster),
		TLS:       tlsCfg,
		KeyPrefix: prefix,
		Logger:    slog.New(slog.NewTextHandler(c.App.ErrWriter, &slog.HandlerOptions{Level: level})),
	}
	return cfg, taskLimits(c, &cfg)
}

// openApp builds the App from the global flags, with setup when the CLI is
// embedded, and checks that Redis answers. The caller closes the App.
func openApp(c *cli.Context, setup Setup) (*app.App, error) {
	cfg, err := config(c)
	if err != nil {
		return nil, err
	}
	return openAppWith(c, setup, cfg)
}

// openAppWith is openApp with the configuration given.
func openAppWith(c *cli.Context, setup Setup, cfg app.Config) (*app.App, error) {
	var (
		a   *app.App
		err error
	)
	if setup != nil {
		a, err = setup(cfg)
		if err == nil && a == nil {
			err = errors.New("it returned no app")
		}
	} else {
		a, err = app.New(cfg)
	}
	if err != nil {
		return nil, fmt.Errorf("set up app %q: %w", cfg.Name, err)
	}
	url := ""
	if a.Config().Client == nil {
		url = a.Config().RedisURL
	}
	if err := ping(c.Context, url, a.Ping); err != nil {
		a.Close()
		if c.Context.Err() != nil {
			return nil, c.Context.Err() // interrupted, not unreachable
		}
		ce := &connectError{err: err}
		if a.Config().Client == nil {
			ce.url = redactURL(a.Config().RedisURL)
			ce.master = sentinelMaster(a.Config().RedisURL)
		}
		return nil, ce
	}
	return a, nil
}

// writeJSON prints v as indented JSON.
func writeJSON(c *cli.Context, v any) error {
	enc := json.NewEncoder(c.App.Writer)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
