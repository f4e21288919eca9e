// Command rekey re-keys a stream with exactly-once outputs: orders keyed by
// customer are forwarded, keyed by product, to the stream sales, and a
// second processor counts the units sold of each product in a table.
package main

import (
	"context"
	"fmt"
	"io"
	"log"
	"os"
	"os/signal"
	"slices"
	"time"

	"github.com/leatdev/leat/app"
	"github.com/leatdev/leat/leattest"
	"github.com/leatdev/leat/stream"
)

// Order is what a customer bought: all orders of a customer go to one
// partition of orders.
type Order struct {
	ID       int    `msgpack:"id"`
	Customer string `msgpack:"customer"`
	Product  string `msgpack:"product"`
	Units    int    `msgpack:"units"`
}

// Sale is an order seen from the product's side: all sales of a product go
// to one partition of sales, where its count lives.
type Sale struct {
	Order   int    `msgpack:"order"`
	Product string `msgpack:"product"`
	Units   int    `msgpack:"units"`
}

var (
	customers = []string{"ada", "bob", "cyd", "dee", "eve"}
	products  = []string{"kettle", "lamp", "mug"}
)

// orders returns the n orders run sends.
func orders(n int) []Order {
	out := make([]Order, n)
	for i := range out {
		out[i] = Order{ID: i + 1, Customer: customers[i%len(customers)], Product: products[i%len(products)], Units: 1 + i%4}
	}
	return out
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, os.Stdout, 30); err != nil {
		log.Fatal(err)
	}
}

// run sends n orders and runs a worker until the units of every product
// are counted, then prints the counts.
func run(ctx context.Context, out io.Writer, n int) error {
	client, closeRedis, err := leattest.TryRedis(ctx, out)
	if err != nil {
		return err
	}
	defer closeRedis()
	a, err := app.New(app.Config{Name: "rekey", Client: client})
	if err != nil {
		return err
	}
	defer a.Close()
	byCustomer, err := stream.Declare[Order](a, "orders", stream.KeyField("customer"), stream.Partitions(4))
	if err != nil {
		return err
	}
	byProduct, err := stream.Declare[Sale](a, "sales", stream.KeyField("product"), stream.Partitions(4))
	if err != nil {
		return err
	}
	units, err := stream.DeclareTable[int](byProduct, "count", "units")
	if err != nil {
		return err
	}

	// rekey forwards each order to sales. The sale is written when the
	// order is acknowledged, in the same step, or not at all: an order
	// processed again (a crash, a lost partition) is not sold twice.
	err = app.Process(a, byCustomer, "rekey", func(ctx context.Context, events *stream.Events[Order]) error {
		sales := byProduct.In(events)
		for e := range events.All() {
			o := e.Record
			if err := sales.Send(Sale{Order: o.ID, Product: o.Product, Units: o.Units}); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	// count adds each sale's units to its product's count, applied with
	// the sale's acknowledgement: exactly-once state.
	err = app.Process(a, byProduct, "count", func(ctx context.Context, events *stream.Events[Sale]) error {
		st := units.In(events)
		for e := range events.All() {
			n, _, err := st.Get(ctx, e.Record.Product)
			if err != nil {
				return err
			}
			if err := st.Set(e.Record.Product, n+e.Record.Units); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return err
	}

	// What the counts should end at: what they hold now (a run before this
	// one left them) plus this run's orders.
	want := map[string]int{}
	for _, p := range products {
		n, _, err := units.Get(ctx, p)
		if err != nil {
			return err
		}
		want[p] = n
	}
	sent := orders(n)
	for _, o := range sent {
		want[o.Product] += o.Units
	}
	if _, err := byCustomer.SendMany(ctx, sent); err != nil {
		return err
	}

	worker, stopWorker := context.WithCancel(ctx)
	defer stopWorker()
	done := make(chan error, 1)
	go func() { done <- a.Run(worker) }()
	got, err := waitCounts(worker, units, want)
	stopWorker()
	if rerr := <-done; err == nil {
		err = rerr
	}
	if err != nil {
		return err
	}
	for _, p := range slices.Sorted(func(yield func(string) bool) {
		for p := range got {
			if !yield(p) {
				return
			}
		}
	}) {
		fmt.Fprintf(out, "%-7s %3d units\n", p, got[p])
	}
	fmt.Fprintf(out, "counted the units of %d orders; see the streams with: leat --app rekey inspect sales\n", n)
	return nil
}

// waitCounts polls the table until every product's count is the one
// wanted, and returns the counts.
func waitCounts(ctx context.Context, units *stream.Table[int], want map[string]int) (map[string]int, error) {
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		got := map[string]int{}
		for p := range want {
			n, _, err := units.Get(ctx, p)
			if err != nil {
				return nil, err
			}
			got[p] = n
		}
		same := true
		for p, n := range want {
			same = same && got[p] == n
		}
		if same {
			return got, nil
		}
		select {
		case <-ctx.Done():
			return got, fmt.Errorf("counts %v, want %v: %w", got, want, ctx.Err())
		case <-tick.C:
		}
	}
}
