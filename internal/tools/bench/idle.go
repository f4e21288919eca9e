package bench

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/leatdev/leat/app"
	"github.com/leatdev/leat/task"
	"github.com/redis/go-redis/v9"
)

// BenchmarkIdle is the name of the idle cost benchmark.
const BenchmarkIdle = "idle"

// Figures of the idle benchmark.
const (
	FigureCalls         = "Redis calls/s"
	FigureConnections   = "connections"
	FigureCallsPerQueue = "Redis calls/s per queue"
)

// Variants of the idle benchmark's task queue workers: one of idleQueues
// task queues, and one of a single queue (its connections, beside the
// other's, show whether they grow with the queues).
const (
	VariantTaskQueues = "leat task queues"
	VariantTaskQueue  = "leat task queue"
)

// idleQueues is how many idle task queues the VariantTaskQueues worker
// runs.
const idleQueues = 10

// Idle measures what one idle worker costs Redis: a worker with one
// processor over a stream of cfg.Wide partitions, every partition owned
// and read, nothing to process (VariantLeat); and a worker of idleQueues
// task queues with nothing to run, each queue's tasks run once first
// (VariantTaskQueues), and one of a single queue (VariantTaskQueue). Over cfg.Idle it counts the commands Redis ran (INFO
// commandstats, Lua scripts' commands included, the benchmark's own INFO
// and CLIENT calls excluded) per second, and the worker's connections
// (CLIENT LIST, by the name of its client). The server should be otherwise
// idle. Every key it wrote is deleted before it returns.
func Idle(ctx context.Context, client redis.UniversalClient, cfg Config) (Result, error) {
	return run(ctx, client, cfg, BenchmarkIdle, func(cfg Config, sp Space) ([]Workload, []Pair, error) {
		return []Workload{
			{Name: VariantLeat, Figures: []string{FigureCalls, FigureConnections}, Run: func(ctx context.Context) ([]float64, error) {
				var calls, conns float64
				_, err := idleWorker(ctx, sp, cfg, func(ctx context.Context) (float64, error) {
					var err error
					calls, conns, err = idleCost(ctx, sp, cfg)
					return 0, err
				})
				return []float64{calls, conns}, err
			}},
			{Name: VariantTaskQueues, Figures: []string{FigureCallsPerQueue, FigureConnections}, Run: func(ctx context.Context) ([]float64, error) {
				calls, conns, err := idleQueuesCost(ctx, sp, cfg, idleQueues)
				return []float64{calls / idleQueues, conns}, err
			}},
			{Name: VariantTaskQueue, Figures: []string{FigureCallsPerQueue, FigureConnections}, Run: func(ctx context.Context) ([]float64, error) {
				calls, conns, err := idleQueuesCost(ctx, sp, cfg, 1)
				return []float64{calls, conns}, err
			}},
		}, nil, nil
	})
}

// idleCost waits for the worker named idleClientName to settle, then
// returns the commands per second Redis ran over cfg.Idle and the worker's
// connections.
func idleCost(ctx context.Context, sp Space, cfg Config) (calls, conns float64, err error) {
	if err := sleep(ctx, memIdleSettle); err != nil {
		return 0, 0, err
	}
	before, err := commandCalls(ctx, sp.client)
	if err != nil {
		return 0, 0, err
	}
	start := time.Now()
	if err := sleep(ctx, cfg.Idle); err != nil {
		return 0, 0, err
	}
	after, err := commandCalls(ctx, sp.client)
	if err != nil {
		return 0, 0, err
	}
	calls = float64(after-before) / time.Since(start).Seconds()
	n, err := namedConnections(ctx, sp.client, idleClientName(sp))
	return calls, float64(n), err
}

// idleQueuesCost runs a worker of n task queues on its own client (named
// idleClientName), runs a task of each, and returns what it costs once idle
// (idleCost).
func idleQueuesCost(ctx context.Context, sp Space, cfg Config, n int) (calls, conns float64, err error) {
	wc, err := sp.namedClient(idleClientName(sp))
	if err != nil {
		return 0, 0, err
	}
	defer wc.Close()
	a, err := app.New(app.Config{Name: appName, Client: wc, KeyPrefix: sp.prefix, Logger: cfg.Logger})
	if err != nil {
		return 0, 0, err
	}
	defer a.Close()
	queues := make([]*task.Queue[int, int], n)
	for i := range queues {
		if queues[i], err = task.Handle(a, fmt.Sprintf("idle%d", i), func(_ context.Context, t *task.Task[int]) (int, error) {
			return t.Payload, nil
		}); err != nil {
			return 0, 0, err
		}
	}
	wctx, stop := context.WithCancel(ctx)
	defer stop()
	worker := spawn(func() error { return a.Run(wctx) })
	defer func() { stop(); _ = worker.wait() }()
	for _, q := range queues {
		id, err := q.Enqueue(ctx, 1)
		if err != nil {
			return 0, 0, err
		}
		rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		_, err = q.Result(rctx, id)
		cancel()
		if err != nil {
			return 0, 0, fmt.Errorf("warm-up task: %w", err)
		}
	}
	if calls, conns, err = idleCost(ctx, sp, cfg); err != nil {
		return 0, 0, err
	}
	stop()
	if err := worker.wait(); err != nil {
		return 0, 0, fmt.Errorf("worker: %w", err)
	}
	return calls, conns, nil
}

// idleClientName is the connection name of the idle worker's client.
func idleClientName(sp Space) string {
	return "leat-bench-worker-" + strings.TrimPrefix(sp.prefix, PrefixRoot)
}

// commandCalls returns the calls of every command in INFO commandstats,
// but INFO's and CLIENT's, which the benchmark itself sends.
func commandCalls(ctx context.Context, c redis.UniversalClient) (int64, error) {
	info, err := c.Info(ctx, "commandstats").Result()
	if err != nil {
		return 0, fmt.Errorf("INFO commandstats: %w", err)
	}
	return parseCommandCalls(info)
}

// parseCommandCalls sums the calls of an INFO commandstats reply, lines
// such as "cmdstat_xreadgroup:calls=12,usec=...", without the commands
// info and client (subcommands included).
func parseCommandCalls(info string) (int64, error) {
	var total int64
	for line := range strings.Lines(info) {
		name, rest, ok := strings.Cut(strings.TrimSpace(line), ":")
		cmd, isStat := strings.CutPrefix(name, "cmdstat_")
		if !ok || !isStat {
			continue
		}
		if cmd == "info" || cmd == "client" || strings.HasPrefix(cmd, "client|") {
			continue
		}
		for field := range strings.SplitSeq(rest, ",") {
			if v, ok := strings.CutPrefix(field, "calls="); ok {
				n, err := strconv.ParseInt(v, 10, 64)
				if err != nil {
					return 0, fmt.Errorf("INFO commandstats: %q: %w", line, err)
				}
				total += n
			}
		}
	}
	return total, nil
}

// namedConnections counts the connections in CLIENT LIST named name.
func namedConnections(ctx context.Context, c redis.UniversalClient, name string) (int, error) {
	list, err := c.ClientList(ctx).Result()
	if err != nil {
		return 0, fmt.Errorf("CLIENT LIST: %w", err)
	}
	n := 0
	for line := range strings.Lines(list) {
		for field := range strings.FieldsSeq(line) {
			if field == "name="+name {
				n++
			}
		}
	}
	return n, nil
}
