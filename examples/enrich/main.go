// Command enrich is a leat app that enriches orders with their customers: a
// processor keeps the customers table from the customers stream; another
// joins each order with its customer (stream.Join, one read per batch) and
// keeps each customer's spending, with the customer's name and tier, in a
// table of its own, exactly once. Its main is the leat CLI with the app's
// setup, so the same binary runs the worker and sends records:
//
//	go run ./examples/enrich --app shop --log-level info worker
//	go run ./examples/enrich --app shop send customers '{"id":"c-1","name":"Ada","tier":"gold"}'
//	go run ./examples/enrich --app shop send orders '{"id":1,"customer":"c-1","cents":1250}'
//	go run ./examples/enrich --app shop table enrich spend c-1
//
// See README.md in this folder.
package main

import (
	"context"
	"fmt"
	"time"

	"github.com/leatdev/leat/app"
	"github.com/leatdev/leat/cmd"
	"github.com/leatdev/leat/executor"
	"github.com/leatdev/leat/stream"
)

// Customer is the record of the "customers" stream, keyed by ID: the last
// record of a customer is its current profile.
type Customer struct {
	ID   string `json:"id" msgpack:"id"`
	Name string `json:"name" msgpack:"name"`
	Tier string `json:"tier" msgpack:"tier"`
}

// Order is the record of the "orders" stream, keyed by customer: an order
// and its customer live in partitions of the same number.
type Order struct {
	ID       int64  `json:"id" msgpack:"id"`
	Customer string `json:"customer" msgpack:"customer"`
	Cents    int64  `json:"cents" msgpack:"cents"`
}

// Spend is the enriched output, per customer: the customer's name and tier
// as joined with its last order, and the count and sum of its orders.
type Spend struct {
	Name   string `json:"name" msgpack:"name"`
	Tier   string `json:"tier" msgpack:"tier"`
	Orders int64  `json:"orders" msgpack:"orders"`
	Cents  int64  `json:"cents" msgpack:"cents"`
}

// partitions of both streams: a join needs them equal (stream.Join checks).
const partitions = 8

func main() { cmd.Main(setup) }

// setup declares the app on the configuration the CLI built from its flags
// and environment.
func setup(cfg app.Config) (*app.App, error) {
	a, err := app.New(cfg)
	if err != nil {
		return nil, err
	}
	if _, err := declare(a); err != nil {
		a.Close()
		return nil, err
	}
	return a, nil
}

// shop is what declare declares.
type shop struct {
	customers *stream.Stream[Customer]
	orders    *stream.Stream[Order]
	profiles  *stream.Table[Customer] // processor "profiles" on customers
	spend     *stream.Table[Spend]    // processor "enrich" on orders
}

func declare(a *app.App) (*shop, error) {
	var s shop
	var err error
	if s.customers, err = stream.Declare[Customer](a, "customers", stream.KeyField("id"), stream.Partitions(partitions)); err != nil {
		return nil, err
	}
	if s.orders, err = stream.Declare[Order](a, "orders", stream.KeyField("customer"), stream.Partitions(partitions)); err != nil {
		return nil, err
	}
	if s.profiles, err = stream.DeclareTable[Customer](s.customers, "profiles", "customers"); err != nil {
		return nil, err
	}
	if s.spend, err = stream.DeclareTable[Spend](s.orders, "enrich", "spend"); err != nil {
		return nil, err
	}
	// Checked here, at declaration: orders and customers must be
	// co-partitioned.
	join, err := stream.Join(s.orders, s.profiles)
	if err != nil {
		return nil, err
	}

	err = app.Process(a, s.customers, "profiles", func(ctx context.Context, events *stream.Events[Customer]) error {
		st := s.profiles.In(events)
		for e := range events.All() {
			if err := st.Set(e.Record.ID, e.Record); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}

	// An order whose customer is not in the table yet (its profile was sent
	// but the profiles processor has not committed it) is tried again a
	// little later, up to 20 times, then dead-lettered.
	return &s, app.Process(a, s.orders, "enrich", func(ctx context.Context, events *stream.Events[Order]) error {
		st := s.spend.In(events)
		for batch := range events.Batches(100, 10*time.Millisecond) {
			found, ok, err := join.GetBatch(ctx, batch) // one round trip for the batch
			if err != nil {
				return err
			}
			for i, e := range batch {
				if !ok[i] {
					return app.RetryAfter(250*time.Millisecond, fmt.Errorf("order %d: customer %q unknown", e.Record.ID, e.Record.Customer))
				}
				sp, _, err := st.Get(ctx, e.Record.Customer)
				if err != nil {
					return err
				}
				sp.Name, sp.Tier = found[i].Name, found[i].Tier
				sp.Orders++
				sp.Cents += e.Record.Cents
				if err := st.Set(e.Record.Customer, sp); err != nil {
					return err
				}
			}
		}
		return nil
	}, app.Retries(20), app.OnError(executor.DeadLetter))
}
