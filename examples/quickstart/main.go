// Command quickstart is leat in one file: it declares a stream of orders
// partitioned by customer, registers a processor that prints each order,
// runs a worker, sends ten orders, waits until all of them are processed,
// prints a summary and stops the worker.
//
//	go run ./examples/quickstart
//
// It uses the Redis server of LEAT_REDIS_URL when that is set; else a
// redis-server on 127.0.0.1:6379 when one answers; else an embedded
// in-memory server (miniredis), good for trying only. Each run works under a
// key prefix of its own and deletes its keys when it ends.
package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"slices"
	"sync"
	"syscall"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/leatdev/leat/app"
	"github.com/leatdev/leat/stream"
	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/logging"
)

// Order is the record type of the "orders" stream.
type Order struct {
	ID       int     `msgpack:"id"`
	Customer string  `msgpack:"customer"`
	Amount   float64 `msgpack:"amount"`
}

// localRedis is where the quickstart looks for a server when LEAT_REDIS_URL
// is not set.
const localRedis = "127.0.0.1:6379"

// timeout bounds the wait for the orders to be processed.
const timeout = 30 * time.Second

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := start(ctx, os.Stdout)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "quickstart:", err)
		os.Exit(1)
	}
}

// start picks the Redis server and runs the quickstart on it.
func start(ctx context.Context, out io.Writer) error {
	redis.SetLogger(&logging.VoidLogger{}) // go-redis's own retry chatter
	if url := os.Getenv("LEAT_REDIS_URL"); url != "" {
		opt, err := redis.ParseURL(url)
		if err != nil {
			return fmt.Errorf("LEAT_REDIS_URL: %w", err)
		}
		c := redis.NewClient(opt)
		defer c.Close()
		fmt.Fprintf(out, "using Redis at %s (LEAT_REDIS_URL)\n", opt.Addr)
		return run(ctx, out, c)
	}
	c := redis.NewClient(&redis.Options{Addr: localRedis})
	defer c.Close()
	pctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	err := c.Ping(pctx).Err()
	cancel()
	if err == nil {
		fmt.Fprintf(out, "using Redis at %s\n", localRedis)
		return run(ctx, out, c)
	}

	fmt.Fprintf(out, "no Redis at %s: using an embedded in-memory server (for trying only)\n", localRedis)
	m, err := miniredis.Run()
	if err != nil {
		return fmt.Errorf("embedded server: %w", err)
	}
	defer m.Close()
	m.ClockTTL(true) // expire keys (locks, leases) as time passes, like Redis
	mc := redis.NewClient(&redis.Options{Addr: m.Addr()})
	defer mc.Close()
	return run(ctx, out, mc)
}

// run runs the quickstart on client under a fresh key prefix, writing what
// happens to out, and deletes the prefix's keys at the end.
func run(ctx context.Context, out io.Writer, client redis.UniversalClient) error {
	prefix := "leat-quickstart:" + randomHex(4)
	defer deleteKeys(context.WithoutCancel(ctx), client, prefix)

	a, err := app.New(app.Config{
		Name:      "quickstart",
		Client:    client,
		KeyPrefix: prefix,
		Logger:    logger(),
	})
	if err != nil {
		return err
	}
	defer a.Close()
	if err := a.Ping(ctx); err != nil {
		return err
	}

	// A stream of orders in 4 partitions: all orders of one customer go to
	// one partition, and are processed there in the order they were sent.
	orders, err := stream.Declare[Order](a, "orders", stream.KeyField("customer"), stream.Partitions(4))
	if err != nil {
		return err
	}

	// The processor is called once per partition, on its own goroutine, and
	// ranges over that partition's events. An event is acknowledged when the
	// loop body that received it finishes.
	var (
		mu     sync.Mutex // guards out and the tallies below
		seen   = map[string]bool{}
		totals = map[string]float64{}
		all    = make(chan struct{})
	)
	const count = 10
	err = app.Process(a, orders, "printer", func(ctx context.Context, events *stream.Events[Order]) error {
		for e := range events.All() {
			o := e.Record
			mu.Lock()
			fmt.Fprintf(out, "order %2d: customer %s, amount %6.2f, partition %d\n", o.ID, o.Customer, o.Amount, e.Partition)
			// Delivery is at least once: count each entry once. Entry IDs are
			// unique within a partition only.
			if id := fmt.Sprintf("%d/%s", e.Partition, e.ID); !seen[id] {
				seen[id] = true
				totals[o.Customer] += o.Amount
				if len(seen) == count {
					close(all)
				}
			}
			mu.Unlock()
		}
		return nil
	})
	if err != nil {
		return err
	}

	// The worker runs until its context is cancelled.
	wctx, stopWorker := context.WithCancel(ctx)
	defer stopWorker()
	done := make(chan error, 1)
	go func() { done <- a.Run(wctx) }()
	stopped := false
	defer func() {
		if !stopped {
			stopWorker()
			<-done
		}
	}()

	customers := []string{"c-ada", "c-bob", "c-cyd", "c-dee"}
	var batch []Order
	for i := range count {
		batch = append(batch, Order{ID: i + 1, Customer: customers[i%len(customers)], Amount: float64(10 + 7*i)})
	}
	begin := time.Now()
	if _, err := orders.Send(ctx, batch...); err != nil {
		return fmt.Errorf("send: %w", err)
	}
	mu.Lock()
	fmt.Fprintf(out, "sent %d orders\n", count)
	mu.Unlock()

	wait := time.NewTimer(timeout)
	defer wait.Stop()
	select {
	case <-all:
	case err := <-done:
		stopped = true
		if err == nil {
			err = ctx.Err()
		}
		return fmt.Errorf("worker stopped early: %w", err)
	case <-wait.C:
		mu.Lock()
		n := len(seen)
		mu.Unlock()
		return fmt.Errorf("only %d of %d orders processed within %s", n, count, timeout)
	case <-ctx.Done():
		return ctx.Err()
	}
	elapsed := time.Since(begin)

	stopWorker()
	stopped = true
	if err := <-done; err != nil {
		return fmt.Errorf("worker: %w", err)
	}

	mu.Lock()
	defer mu.Unlock()
	names := make([]string, 0, len(totals))
	for c := range totals {
		names = append(names, c)
	}
	slices.Sort(names)
	fmt.Fprintf(out, "processed %d orders of %d customers in %s\n", len(seen), len(totals), elapsed.Round(time.Millisecond))
	for _, c := range names {
		fmt.Fprintf(out, "  %s: %7.2f\n", c, totals[c])
	}
	return nil
}

// logger writes leat's logs to stderr, at the level of LEAT_LOG_LEVEL
// (debug, info, warn or error; default error).
func logger() *slog.Logger {
	level := slog.LevelError
	if s := os.Getenv("LEAT_LOG_LEVEL"); s != "" {
		_ = level.UnmarshalText([]byte(s))
	}
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// deleteKeys deletes every key under prefix.
func deleteKeys(ctx context.Context, c redis.UniversalClient, prefix string) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	iter := c.Scan(ctx, 0, prefix+":*", 1000).Iterator()
	var keys []string
	for iter.Next(ctx) {
		keys = append(keys, iter.Val())
	}
	for _, k := range keys { // one by one: the keys may live in different cluster slots
		if err := c.Del(ctx, k).Err(); err != nil && !errors.Is(err, context.DeadlineExceeded) {
			return
		}
	}
}
