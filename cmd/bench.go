package cmd

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"

	"github.com/leatdev/leat/app"
	"github.com/leatdev/leat/internal/bench"
	"github.com/redis/go-redis/v9"
	"github.com/urfave/cli/v2"
)

// Names of the bench command's flags (--partitions is flagPartitions).
const (
	flagEvents  = "events"
	flagRounds  = "rounds"
	flagPayload = "payload"
	flagOnly    = "only"
	flagJSON    = "json"
)

// benchmarks are the benchmarks of "leat bench", in the order they run.
var benchmarks = []struct {
	name string
	run  func(context.Context, redis.UniversalClient, bench.Config) (bench.Result, error)
}{
	{bench.BenchmarkSend, bench.Send},
	{bench.BenchmarkProcess, bench.Process},
	{bench.BenchmarkTasks, bench.Tasks},
}

// benchReport is the document "leat bench --json" prints.
type benchReport struct {
	Benchmarks []bench.Result `json:"benchmarks"`
}

func benchCommand() *cli.Command {
	return &cli.Command{
		Name:  "bench",
		Usage: "measure leat against raw go-redis loops on the same Redis and print the ratio",
		Description: "send: SendMany (which encodes and routes) against pipelined XADD MAXLEN ~ of records\n" +
			"encoded and routed beforehand. process: a worker with a no-op processor (which decodes)\n" +
			"against one consumer looping over XREADGROUP on all partitions and XACK, without\n" +
			"decoding (raw) and with msgpack decoding (raw+decode). tasks: a worker running no-op\n" +
			"tasks of a task queue at concurrency 50, results stored, against a raw loop that\n" +
			"stores each result and acknowledges (enqueueing untimed). Each variant runs once per\n" +
			"round, in an order that rotates from round to round; the table shows the median\n" +
			"events/s and the ratio leat/raw (below 1: leat is slower).\n\n" +
			"Runs against the --redis server (no --app needed), under a fresh key prefix\n" +
			"leat-bench:RANDOM whose keys are all deleted at the end. The server should be\n" +
			"standalone and otherwise idle; Redis Cluster is not supported.",
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
			client, err := benchClient(c)
			if err != nil {
				return err
			}
			defer client.Close()
			var results []bench.Result
			for _, b := range benchmarks {
				if only != "" && only != b.name {
					continue
				}
				r, err := b.run(c.Context, client, cfg)
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

func benchFlags() []cli.Flag {
	return []cli.Flag{
		&cli.IntFlag{Name: flagEvents, Usage: "`N` events each variant sends or processes per round", Value: bench.DefaultEvents},
		&cli.IntFlag{Name: flagRounds, Usage: "`N` rounds; the table shows the median", Value: bench.DefaultRounds},
		&cli.IntFlag{Name: flagPartitions, Usage: "`N` partitions of the benchmark streams", Value: bench.DefaultPartitions},
		&cli.IntFlag{Name: flagPayload, Usage: "`BYTES` of filler in each record", Value: bench.DefaultPayloadBytes},
		&cli.StringFlag{Name: flagOnly, Usage: "run only one benchmark: `send|process|tasks`", DefaultText: "all"},
		&cli.BoolFlag{Name: flagJSON, Usage: "print every round's figures as JSON instead of the table"},
		helpFlag(),
	}
}

// benchConfig returns the benchmark configuration and the --only benchmark
// ("" for all) from the flags.
func benchConfig(c *cli.Context) (bench.Config, string, error) {
	cfg := bench.Config{
		Events:       c.Int(flagEvents),
		Rounds:       c.Int(flagRounds),
		Partitions:   c.Int(flagPartitions),
		PayloadBytes: c.Int(flagPayload),
	}
	for _, f := range []struct {
		name     string
		v, limit int
	}{
		{flagEvents, cfg.Events, 1<<31 - 1},
		{flagRounds, cfg.Rounds, 1000},
		{flagPartitions, cfg.Partitions, 65536},
		{flagPayload, cfg.PayloadBytes, 1 << 20},
	} {
		if f.v < 1 || f.v > f.limit {
			return cfg, "", usageErrorf("--%s %d out of range 1..%d", f.name, f.v, f.limit)
		}
	}
	only := c.String(flagOnly)
	if only != "" && only != bench.BenchmarkSend && only != bench.BenchmarkProcess && only != bench.BenchmarkTasks {
		return cfg, "", usageErrorf("--only %q: want %s, %s or %s", only, bench.BenchmarkSend, bench.BenchmarkProcess, bench.BenchmarkTasks)
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(c.String(flagLogLevel))); err != nil {
		return cfg, "", usageErrorf("--log-level %q is invalid: use debug, info, warn or error", c.String(flagLogLevel))
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
	if err := ping(c.Context, raw, func(ctx context.Context) error { return client.Ping(ctx).Err() }); err != nil {
		client.Close()
		if c.Context.Err() != nil {
			return nil, c.Context.Err() // interrupted, not unreachable
		}
		return nil, &connectError{url: redactURL(raw), err: err}
	}
	return client, nil
}
