// Command quickstart sends ten orders to a partitioned stream and runs a worker that prints them.
package main

import (
	"context"
	"fmt"
	"io"
	"log"
	"os"
	"os/signal"
	"sync"

	"github.com/leatdev/leat/app"
	"github.com/leatdev/leat/leattest"
	"github.com/leatdev/leat/stream"
)

type Order struct {
	ID       int     `msgpack:"id"`
	Customer string  `msgpack:"customer"`
	Amount   float64 `msgpack:"amount"`
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, os.Stdout); err != nil {
		log.Fatal(err)
	}
}

func run(ctx context.Context, out io.Writer) error {
	// LEAT_REDIS_URL, else a redis-server on 127.0.0.1:6379, else in memory.
	client, closeRedis, err := leattest.TryRedis(ctx, out)
	if err != nil {
		return err
	}
	defer closeRedis()
	a, err := app.New(app.Config{Name: "quickstart", Client: client})
	if err != nil {
		return err
	}
	defer a.Close()
	// 4 partitions: all orders of a customer go to one, in the order sent.
	orders, err := stream.Declare[Order](a, "orders", stream.KeyField("customer"), stream.Partitions(4))
	if err != nil {
		return err
	}
	for i := range 10 {
		o := Order{ID: i + 1, Customer: []string{"ada", "bob", "cyd", "dee"}[i%4], Amount: float64(10 + 7*i)}
		if _, err := orders.Send(ctx, o); err != nil {
			return err
		}
	}
	worker, stopWorker := context.WithCancel(ctx)
	defer stopWorker()
	var mu sync.Mutex
	seen := map[int]bool{} // order IDs: delivery is at least once
	// Called per partition, on its own goroutine; an event is acknowledged when its loop body ends.
	err = app.Process(a, orders, "printer", func(ctx context.Context, events *stream.Events[Order]) error {
		for e := range events.All() {
			mu.Lock()
			fmt.Fprintf(out, "order %2d: customer %s, amount %6.2f, partition %d\n", e.Record.ID, e.Record.Customer, e.Record.Amount, e.Partition)
			if seen[e.Record.ID] = true; len(seen) == 10 {
				stopWorker() // a graceful stop: events in flight end and are acknowledged
			}
			mu.Unlock()
		}
		return nil
	})
	if err != nil {
		return err
	}
	if err := a.Run(worker); err != nil { // a worker: takes the partitions, runs "printer"
		return err
	}
	fmt.Fprintf(out, "processed %d orders; see the stream with: leat --app quickstart inspect orders\n", len(seen))
	return nil
}
