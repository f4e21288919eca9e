package cmd

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime/pprof"
	"slices"
	"strings"
	"time"

	"github.com/leatdev/leat/app"
	"github.com/leatdev/leat/internal/rdb"
	"github.com/leatdev/leat/internal/tools/bench"
	"github.com/redis/go-redis/v9"
	"github.com/urfave/cli/v2"
	"golang.org/x/term"
)

// Names of the bench command's flags (--partitions is flagPartitions).
const (
	flagEvents  = "events"
	flagRounds  = "rounds"
	flagPayload = "payload"
	flagOnly    = "only"
	flagJSON    = "json"
	flagRate    = "rate"
	flagLatency = "latency"
	flagIdle    = "idle"
	flagWide    = "wide"
	flagAOF     = "aof"
	flagProfile = "cpuprofile"
)

// benchmark is one benchmark of "leat bench".
type benchmark struct {
	name string
	run  func(context.Context, redis.UniversalClient, bench.Config) (bench.Result, error)
}

// benchmarks are the benchmarks of "leat bench", in the order they run.
var benchmarks = []benchmark{
	{bench.BenchmarkSend, bench.Send},
	{bench.BenchmarkProcess, bench.Process},
	{bench.BenchmarkBoth, bench.Both},
	{bench.BenchmarkLatency, bench.Latency},
	{bench.BenchmarkTasks, bench.Tasks},
	{bench.BenchmarkRebalance, bench.Rebalance},
	{bench.BenchmarkMemory, bench.Memory},
	{bench.BenchmarkIdle, bench.Idle},
}

// benchReport is the document "leat bench --json" prints.
type benchReport struct {
	Benchmarks []bench.Result `json:"benchmarks"`
}

func benchCommand() *cli.Command {
	return &cli.Command{
		Name:  "bench",
		Usage: "measure leat against raw go-redis loops on the same Redis and print the ratios",
		Description: "send: SendMany against pipelined XADD MAXLEN ~ of records encoded beforehand.\n" +
			"process: a worker with a no-op processor against an XREADGROUP/XACK loop, without\n" +
			"and with decoding (raw, raw+decode). produce+consume: both at once, from an empty\n" +
			"stream. latency: --rate events/s for --latency, one unpipelined Send each, to a\n" +
			"processor, against XADD to a blocking XREADGROUP: p50, p99, p99.9, over --partitions\n" +
			"and again over --wide partitions (leat wide, raw wide). tasks: no-op tasks, results\n" +
			"stored, at concurrency 10 and 50 against a raw loop. rebalance: the\n" +
			"pause of moved and unmoved partitions when a worker joins and stops gracefully.\n" +
			"memory: worker RSS idle and draining (--wide partitions) and Redis bytes per entry\n" +
			"of a 100-byte payload, leat against raw XADD. idle: Redis calls/s and connections of\n" +
			"one idle worker over --wide partitions, and per queue of one with 10 idle task queues.\n" +
			"process, produce+consume and tasks also show the Redis server's and this process's\n" +
			"CPU µs per event or task.\n\n" +
			"Each variant runs once per round, in an order that rotates from round to round; the\n" +
			"table shows each figure's median and the ratios leat/baseline (for a rate, below 1\n" +
			"is slower; for a latency, a size or a CPU cost, above 1 costs more).\n\n" +
			"Runs against the --redis server (no --app needed), or with --aof against a\n" +
			"redis-server it starts with appendonly yes and appendfsync everysec, under a fresh\n" +
			"key prefix leat-bench:RANDOM whose keys are all deleted at the end. The server should\n" +
			"be standalone and otherwise idle; Redis Cluster is not supported.",
		Flags:        benchFlags(),
		HideHelp:     true, // see helpFlag
		OnUsageError: onUsageError,
		Action: func(c *cli.Context) error {
			if err := wantArgs(c); err != nil {
				return err
			}
			cfg, only, err := benchConfig(c)
			if err != nil {
				return err
			}
			var client *redis.Client
			if c.Bool(flagAOF) && c.IsSet(flagRedis) {
				return usageErrorf("--aof starts a redis-server of its own: drop --redis (or LEAT_REDIS_URL)")
			}
			if c.Bool(flagAOF) {
				srv, err := bench.StartAOFServer(c.Context)
				if err != nil {
					return err
				}
				defer srv.Stop()
				opt, err := redis.ParseURL(srv.URL)
				if err != nil {
					return err
				}
				client = redis.NewClient(opt)
			} else if client, err = benchClient(c); err != nil {
				return err
			}
			defer client.Close()
			// A full run takes minutes: on a terminal, say what runs.
			status := io.Discard
			if f, ok := c.App.ErrWriter.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
				status = f
			}
			if path := c.String(flagProfile); path != "" {
				stop, err := startCPUProfile(path)
				if err != nil {
					return err
				}
				defer stop()
			}
			var results []bench.Result
			for _, b := range benchmarks {
				if only != nil && !only[b.name] {
					continue
				}
				start := time.Now()
				fmt.Fprintf(status, "bench: %s ...", b.name)
				r, err := b.run(c.Context, client, cfg)
				fmt.Fprintf(status, " %s\n", time.Since(start).Round(time.Second))
				if err != nil {
					return fmt.Errorf("bench %s: %w", b.name, err)
				}
				results = append(results, r)
			}
			if c.Bool(flagJSON) {
				enc := json.NewEncoder(c.App.Writer)
				enc.SetIndent("", "  ")
				return enc.Encode(benchReport{Benchmarks: results})
			}
			return bench.WriteTable(c.App.Writer, results)
		},
	}
}

// benchNames returns the names of the benchmarks, comma-separated.
func benchNames() string {
	names := make([]string, len(benchmarks))
	for i, b := range benchmarks {
		names[i] = b.name
	}
	return strings.Join(names, ",")
}

func benchFlags() []cli.Flag {
	return []cli.Flag{
		&cli.IntFlag{Name: flagEvents, Usage: "`N` events (or tasks) each throughput variant moves per round", Value: bench.DefaultEvents},
		&cli.IntFlag{Name: flagRounds, Usage: "`N` rounds; the table shows the median", Value: bench.DefaultRounds},
		&cli.IntFlag{Name: flagPartitions, Usage: "`N` partitions of the benchmark streams", Value: bench.DefaultPartitions},
		&cli.IntFlag{Name: flagPayload, Usage: "`BYTES` of filler in each record", Value: bench.DefaultPayloadBytes},
		&cli.IntFlag{Name: flagRate, Usage: "`N` events/s the latency benchmark sends", Value: bench.DefaultRate},
		&cli.DurationFlag{Name: flagLatency, Usage: "`DURATION` of sending per latency round", Value: bench.DefaultLatency},
		&cli.DurationFlag{Name: flagIdle, Usage: "`DURATION` the idle benchmark watches an idle worker", Value: bench.DefaultIdle},
		&cli.IntFlag{Name: flagWide, Usage: "`N` partitions of the memory and idle benchmarks and of the latency benchmark's wide variants", Value: bench.DefaultWide},
		&cli.StringFlag{Name: flagOnly, Usage: "run only these benchmarks: `LIST` of " + benchNames(), DefaultText: "all"},
		&cli.BoolFlag{Name: flagAOF, Usage: "start a redis-server (from PATH) with appendonly yes, appendfsync everysec, and run against it instead of --redis"},
		&cli.BoolFlag{Name: flagJSON, Usage: "print every round's figures as JSON instead of the table"},
		&cli.StringFlag{Name: flagProfile, Usage: "write a CPU profile of the whole run (every variant; read it with go tool pprof) to `FILE`"},
		helpFlag(),
	}
}

// benchConfig returns the benchmark configuration and the --only
// benchmarks (nil for all) from the flags.
func benchConfig(c *cli.Context) (bench.Config, map[string]bool, error) {
	cfg := bench.Config{
		Events:       c.Int(flagEvents),
		Rounds:       c.Int(flagRounds),
		Partitions:   c.Int(flagPartitions),
		PayloadBytes: c.Int(flagPayload),
		Rate:         c.Int(flagRate),
		Latency:      c.Duration(flagLatency),
		Idle:         c.Duration(flagIdle),
		Wide:         c.Int(flagWide),
	}
	for _, f := range []struct {
		name     string
		v, limit int
	}{
		{flagEvents, cfg.Events, 1<<31 - 1},
		{flagRounds, cfg.Rounds, 1000},
		{flagPartitions, cfg.Partitions, 65536},
		{flagPayload, cfg.PayloadBytes, 1 << 20},
		{flagRate, cfg.Rate, 1_000_000},
		{flagWide, cfg.Wide, 65536},
	} {
		if f.v < 1 || f.v > f.limit {
			return cfg, nil, usageErrorf("--%s %d out of range 1..%d", f.name, f.v, f.limit)
		}
	}
	for _, f := range []struct {
		name string
		v    time.Duration
	}{{flagLatency, cfg.Latency}, {flagIdle, cfg.Idle}} {
		if f.v < time.Millisecond || f.v > time.Hour {
			return cfg, nil, usageErrorf("--%s %s out of range 1ms..1h", f.name, f.v)
		}
	}
	var only map[string]bool
	if c.IsSet(flagOnly) {
		only = map[string]bool{}
		for name := range strings.SplitSeq(c.String(flagOnly), ",") {
			if !slices.ContainsFunc(benchmarks, func(b benchmark) bool { return b.name == name }) {
				return cfg, nil, usageErrorf("--only %q: want a comma-separated list of %s", name, benchNames())
			}
			only[name] = true
		}
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(c.String(flagLogLevel))); err != nil {
		return cfg, nil, usageErrorf("--log-level %q is invalid: use debug, info, warn or error", c.String(flagLogLevel))
	}
	cfg.Logger = slog.New(slog.NewTextHandler(c.App.ErrWriter, &slog.HandlerOptions{Level: level}))
	return cfg, only, nil
}

// benchClient connects to the --redis server and checks that it answers.
// The caller closes the client.
func benchClient(c *cli.Context) (*redis.Client, error) {
	raw := c.String(flagRedis)
	if c.Bool(flagCluster) || app.IsClusterURL(raw) {
		return nil, usageErrorf("bench runs on a single Redis server; a Redis Cluster (--%s, LEAT_REDIS_CLUSTER or ?addr=) is not supported", flagCluster)
	}
	if app.IsSentinelURL(raw) {
		return nil, usageErrorf("bench runs on a single Redis server; give the master's URL rather than a Sentinel URL (master_name)")
	}
	if err := checkRedisURL(raw); err != nil {
		return nil, err
	}
	opt, err := redis.ParseURL(raw)
	if err != nil {
		return nil, usageErrorf("invalid --redis URL: %s", scrub(err.Error(), raw))
	}
	t, err := tlsConfig(c, raw)
	if err != nil {
		return nil, err
	}
	if err := t.Apply(opt); err != nil {
		return nil, usageError{err}
	}
	client := redis.NewClient(opt)
	if err := ping(c.Context, raw, func(ctx context.Context) error { return rdb.Ping(ctx, client) }); err != nil {
		client.Close()
		if c.Context.Err() != nil {
			return nil, c.Context.Err() // interrupted, not unreachable
		}
		return nil, &connectError{url: redactURL(raw), err: err}
	}
	return client, nil
}

// startCPUProfile writes a CPU profile of this process to path until the
// returned function is called.
func startCPUProfile(path string) (func(), error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		_ = f.Close()
		return nil, err
	}
	return func() {
		pprof.StopCPUProfile()
		_ = f.Close()
	}, nil
}
