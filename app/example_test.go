package app_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"time"

	"github.com/leatdev/leat/app"
	"github.com/leatdev/leat/stream"
	"github.com/redis/go-redis/v9"
)

type Order struct {
	ID       int64   `msgpack:"id"`
	Customer string  `msgpack:"customer"`
	Amount   float64 `msgpack:"amount"`
}

// A processor keeping running totals per customer: events of one customer
// arrive in order, on one worker at a time. Each call of the processor
// serves one partition from its own goroutine, so state kept inside the
// call needs no lock; state shared across partitions would.
func ExampleProcess() {
	a, err := app.New(app.Config{Name: "shop", RedisURL: "redis://127.0.0.1:6379"})
	if err != nil {
		log.Fatal(err)
	}
	defer a.Close()
	orders, err := stream.Declare[Order](a, "orders", stream.KeyField("customer"))
	if err != nil {
		log.Fatal(err)
	}
	err = app.Process(a, orders, "totals", func(ctx context.Context, events *stream.Events[Order]) error {
		totals := map[string]float64{} // this partition's customers only
		for e := range events.All() {
			totals[e.Record.Customer] += e.Record.Amount
		}
		return nil
	}, app.OnError(app.DeadLetter), app.Retries(3))
	if err != nil {
		log.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := a.Run(ctx); err != nil { // until ctx ends, then a graceful stop
		log.Fatal(err)
	}
}

// Batches of at most 100 events, waiting at most 50ms for one to fill: a
// batch is acknowledged as a unit when the loop body returns.
func ExampleProcess_batches() {
	a, _ := app.New(app.Config{Name: "shop"})
	orders, _ := stream.Declare[Order](a, "orders", stream.KeyField("customer"))
	_ = app.Process(a, orders, "bulk", func(ctx context.Context, events *stream.Events[Order]) error {
		for batch := range events.Batches(100, 50*time.Millisecond) {
			fmt.Println(len(batch), "orders")
		}
		return nil
	})
}

// A leader-only task: it runs on one worker of the app at a time and moves
// to another when that worker stops or dies.
func ExampleApp_Background() {
	a, _ := app.New(app.Config{Name: "shop"})
	_ = a.Background("report", func(ctx context.Context) error {
		fmt.Println("only on the leader")
		return nil
	}, app.Schedule{Cron: "*/5 * * * *", LeaderOnly: true})
}

// Writes outside Redis made safe with the fencing token: the store keeps,
// per partition, the highest token it has seen, and refuses a write with a
// lower one (here in SQL: one conditional UPDATE, so the check and the write
// are atomic in the store). A worker that paused past its lock expiry and
// resumed carries an older token than its successor: its late writes are
// refused.
func ExampleProcess_fencingToken() {
	a, _ := app.New(app.Config{Name: "shop"})
	orders, _ := stream.Declare[Order](a, "orders", stream.KeyField("customer"))
	_ = app.Process(a, orders, "ledger", func(ctx context.Context, events *stream.Events[Order]) error {
		for e := range events.All() {
			// UPDATE ledger SET total = total + $1, fence = $2
			//  WHERE customer = $3 AND fence <= $2
			// zero rows updated: a newer owner has written; stop.
			fmt.Println("write", e.Record.Customer, "with token", events.Token())
		}
		return nil
	})
}

// Writes into Redis made safe with a fenced transaction: applied only while
// this worker holds the partition, atomically with that check.
func ExampleProcess_fenced() {
	a, _ := app.New(app.Config{Name: "shop"})
	orders, _ := stream.Declare[Order](a, "orders", stream.KeyField("customer"))
	_ = app.Process(a, orders, "totals", func(ctx context.Context, events *stream.Events[Order]) error {
		totals := events.LocalKey("totals") // in the partition's slot, for Redis Cluster
		for e := range events.All() {
			err := events.Fenced(ctx, func(pipe redis.Pipeliner) error {
				pipe.HIncrByFloat(ctx, totals, e.Record.Customer, e.Record.Amount)
				return nil
			})
			if errors.Is(err, stream.ErrNotOwner) {
				return nil // the partition moved on: its new owner goes on
			}
			if err != nil {
				return err
			}
		}
		return nil
	})
}

// Retries of transient Redis errors are on by default (30s, from 100ms up
// to 5s); a processor can change them or turn them off.
func ExampleTransientRetries() {
	a, _ := app.New(app.Config{Name: "shop"})
	defer a.Close()
	orders, _ := stream.Declare[Order](a, "orders", stream.KeyField("customer"))
	_ = app.Process(a, orders, "totals", func(ctx context.Context, events *stream.Events[Order]) error {
		for range events.All() {
		}
		return nil
	}, app.TransientRetries(time.Minute, 200*time.Millisecond, 10*time.Second))
	_ = app.Process(a, orders, "audit", func(ctx context.Context, events *stream.Events[Order]) error {
		for range events.All() {
		}
		return nil
	}, app.NoTransientRetries())
	for _, p := range a.Processors() {
		t := p.Options.Transient
		fmt.Println(p.Name, t.For, t.Backoff, t.MaxBackoff, t.Off)
	}
	// Output:
	// totals 1m0s 200ms 10s false
	// audit 30s 100ms 5s true
}
