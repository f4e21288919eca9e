// Command peers measures leat beside its peers on one Redis server, in one
// run: asynq and BullMQ (task queues; BullMQ in Node, when node and npm
// are in PATH) and watermill-redisstream (a pub/sub library over Redis
// Streams), with leat's raw go-redis baselines, and prints one table with
// the medians, the ratios and the machine it ran on, then one of the
// Redis memory each task queue keeps per task.
//
//	./scripts/bench-peers                            # starts its own redis-server
//	./scripts/bench-peers --redis redis://127.0.0.1:6379 --events 50000
//
// It is a module of its own (bench/peers/go.mod), outside leat's workspace,
// so that leat's module graph never holds the peers. See
// docs/benchmarks.md.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strconv"
	"syscall"

	"github.com/leatdev/leat/internal/tools/bench"
	"github.com/redis/go-redis/v9"
)

// Names of the peers' variants.
const (
	peerAsynq     = "asynq"
	peerWatermill = "watermill"
	peerBullMQ    = "bullmq"
)

// Settings fixed by the comparison.
const (
	enqueueGoroutines = 16 // asynq's enqueue, and leat's
	publishGoroutines = 64 // watermill's publish, and leat's and raw's
	subscribers       = 8  // watermill's subscribers in one consumer group
)

// Names of the benchmarks of the peers table.
const (
	benchEnqueue   = "enqueue"
	benchTasks     = "tasks"
	benchPublish   = "publish"
	benchSubscribe = "subscribe"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "peers:", err)
		if errors.Is(err, flag.ErrHelp) {
			os.Exit(2)
		}
		os.Exit(1)
	}
}

// run parses args, runs the benchmarks and writes the table to stdout.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("peers", flag.ContinueOnError)
	fs.SetOutput(stderr)
	url := fs.String("redis", "", "`URL` of an idle standalone server (default: start a redis-server from PATH on a free port)")
	aof := fs.Bool("aof", false, "start the redis-server with appendonly yes, appendfsync everysec (without --redis)")
	events := fs.Int("events", 20_000, "`N` tasks or messages each variant handles per round")
	rounds := fs.Int("rounds", bench.DefaultRounds, "`N` rounds; the table shows the median")
	payload := fs.Int("payload", bench.DefaultPayloadBytes, "`BYTES` of payload per task or message")
	only := fs.String("only", "", "run only one benchmark: `NAME` of enqueue, tasks, publish, subscribe, memory")
	withBullMQ := fs.Bool("bullmq", true, "run BullMQ too, when node and npm are in PATH (npm ci in bench/peers/bullmq on first use)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("want no arguments, got %q", fs.Args())
	}
	if *url != "" && *aof {
		return errors.New("--aof starts a server of its own: drop --redis")
	}
	for name, v := range map[string]int{"events": *events, "rounds": *rounds, "payload": *payload} {
		if v < 1 {
			return fmt.Errorf("--%s %d: want at least 1", name, v)
		}
	}
	switch *only {
	case "", benchEnqueue, benchTasks, benchPublish, benchSubscribe, benchMemory:
	default:
		return fmt.Errorf("--only %q: want enqueue, tasks, publish, subscribe or memory", *only)
	}
	cfg, err := bench.Config{
		Events: *events, Rounds: *rounds, PayloadBytes: *payload,
		Logger: slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
	}.WithDefaults()
	if err != nil {
		return err
	}

	if *url == "" {
		srv, err := bench.StartServer(ctx, *aof)
		if err != nil {
			return err
		}
		defer srv.Stop()
		*url = srv.URL
	}
	opt, err := redis.ParseURL(*url)
	if err != nil {
		return fmt.Errorf("--redis: %w", err)
	}
	client := redis.NewClient(opt)
	defer client.Close()
	if err := client.Ping(ctx).Err(); err != nil {
		return fmt.Errorf("cannot reach Redis at %s: %w", opt.Addr, err)
	}

	m, err := describeMachine(ctx, client)
	if err != nil {
		return err
	}
	// Each peer gets clients of its own: closing a watermill publisher or
	// subscriber closes its client.
	dial := func() *redis.Client {
		o, _ := redis.ParseURL(*url) // parsed above
		return redis.NewClient(o)
	}
	var notes []string
	var bull *bullmq
	switch {
	case *only == benchPublish || *only == benchSubscribe: // no BullMQ rows
	case *withBullMQ:
		bull, err = newBullMQ(ctx, bullmqDir, *url, stderr)
		if errors.Is(err, errNoNode) {
			notes = append(notes, fmt.Sprintf("BullMQ skipped: %v", err))
		} else if err != nil {
			return err
		}
	default:
		notes = append(notes, "BullMQ skipped: --bullmq=false")
	}
	// The memory benchmark empties the server between variants: it runs
	// first, and only on a server that holds nothing.
	var mem []memRow
	if *only == "" || *only == benchMemory {
		mem, notes, err = runMemory(ctx, client, dial, cfg, bull, notes)
		if err != nil {
			return fmt.Errorf("%s: %w", benchMemory, err)
		}
	}
	results, err := runAll(ctx, client, dial, cfg, *only, bull)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "machine: %s\n", m)
	fmt.Fprintf(stdout, "settings: %s per variant and round, %d-byte payloads, %d partitions (leat), enqueue from %d goroutines, publish from %d, %d watermill subscribers\n\n",
		strconv.Itoa(cfg.Events)+" tasks or messages", cfg.PayloadBytes, cfg.Partitions, enqueueGoroutines, publishGoroutines, subscribers)
	if len(results) > 0 {
		if err := bench.WriteTable(stdout, results); err != nil {
			return err
		}
	}
	if len(mem) > 0 {
		if len(results) > 0 {
			fmt.Fprintln(stdout)
		}
		if err := writeMemoryTable(stdout, cfg.Events, mem); err != nil {
			return err
		}
	}
	for _, n := range notes {
		fmt.Fprintf(stdout, "note: %s\n", n)
	}
	return nil
}

// runMemory runs the memory benchmark with leat, asynq and, if bull is
// not nil, BullMQ, when the server holds no key; otherwise it adds a note
// saying why it did not.
func runMemory(ctx context.Context, client *redis.Client, dial func() *redis.Client, cfg bench.Config, bull *bullmq, notes []string) ([]memRow, []string, error) {
	empty, err := serverEmpty(ctx, client)
	if err != nil {
		return nil, notes, err
	}
	if !empty {
		return nil, append(notes, "memory skipped: it empties the server (FLUSHALL) between variants, and this one holds keys"), nil
	}
	sp, err := bench.NewSpace(client)
	if err != nil {
		return nil, notes, err
	}
	vs := []memVariant{leatMemory(sp, cfg), asynqMemory(dial, sp)}
	if bull != nil {
		vs = append(vs, bull.memory(sp))
	}
	rows, err := measureMemory(ctx, client, cfg.Events, vs)
	return rows, notes, err
}

// runAll runs the benchmarks (all, or only the one named) and returns
// their results.
func runAll(ctx context.Context, client *redis.Client, dial func() *redis.Client, cfg bench.Config, only string, bull *bullmq) (results []bench.Result, err error) {
	sp, err := bench.NewSpace(client)
	if err != nil {
		return nil, err
	}
	clean := func(ctx context.Context) error {
		return errors.Join(sp.Clean(ctx), asynqClean(ctx, client, sp))
	}
	defer func() {
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), bench.DropTimeout)
		defer cancel()
		err = errors.Join(err, clean(dctx))
	}()

	type suite struct {
		name  string
		ws    []bench.Workload
		pairs []bench.Pair
	}
	var tasks suite
	tasks.name = benchTasks
	for _, c := range bench.TaskConcurrencies {
		leat, peer := bench.LeatTasks(sp, cfg, c), asynqTasks(dial, sp, cfg, c)
		tasks.ws = append(tasks.ws, leat, peer)
		tasks.pairs = append(tasks.pairs, bench.Pair{Of: leat.Name, To: bench.VariantRaw}, bench.Pair{Of: leat.Name, To: peer.Name})
	}
	tasks.ws = append(tasks.ws, bench.RawTasks(sp, cfg))
	enqueue := suite{benchEnqueue, []bench.Workload{bench.LeatEnqueue(sp, cfg, enqueueGoroutines), asynqEnqueue(dial, sp, cfg, enqueueGoroutines)},
		[]bench.Pair{{Of: bench.VariantLeat, To: peerAsynq}}}
	if bull != nil {
		enqueue.ws = append(enqueue.ws, bull.enqueue(sp, cfg, enqueueGoroutines))
		enqueue.pairs = append(enqueue.pairs, bench.Pair{Of: bench.VariantLeat, To: peerBullMQ})
		for _, c := range bench.TaskConcurrencies {
			peer := bull.tasks(sp, cfg, c)
			tasks.ws = append(tasks.ws, peer)
			tasks.pairs = append(tasks.pairs, bench.Pair{Of: bench.TaskVariant(c), To: peer.Name})
		}
	}
	suites := []suite{
		enqueue,
		tasks,
		{benchPublish, []bench.Workload{bench.LeatSendEach(sp, cfg, publishGoroutines), bench.RawSendEach(sp, cfg, publishGoroutines), wmPublish(dial, sp, cfg, publishGoroutines)},
			[]bench.Pair{{Of: bench.VariantLeat, To: bench.VariantRaw}, {Of: bench.VariantLeat, To: peerWatermill}}},
		{benchSubscribe, []bench.Workload{bench.LeatProcess(sp, cfg), bench.RawProcess(sp, cfg, true), wmSubscribe(dial, sp, cfg, subscribers)},
			[]bench.Pair{{Of: bench.VariantLeat, To: bench.VariantRawDecode}, {Of: bench.VariantLeat, To: peerWatermill}}},
	}
	for _, s := range suites {
		if only != "" && only != s.name {
			continue
		}
		vs, err := bench.Measure(ctx, cfg.Rounds, clean, s.ws)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", s.name, err)
		}
		results = append(results, bench.NewResult(s.name, cfg, vs, s.pairs...))
	}
	return results, nil
}
