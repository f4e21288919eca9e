// Command orders is a small leat app in one binary: a stream of orders
// partitioned by customer, a processor keeping each customer's running total
// in Redis, and a background task that only the leader runs, logging the top
// customers every 10 seconds. Its main is the leat CLI with the app's Setup,
// so the same binary runs the worker and sends orders:
//
//	go run ./examples/orders --app shop --log-level info worker
//	go run ./examples/orders --app shop send orders '{"id":1,"customer":"c-42","amount":12.5}'
//	go run ./examples/orders --app shop sendmany orders orders.jsonl
//
// See README.md in this folder.
package main

import (
	"cmp"
	"context"
	_ "embed"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/leatdev/leat/app"
	"github.com/leatdev/leat/cmd"
	"github.com/leatdev/leat/stream"
	"github.com/redis/go-redis/v9"
)

// Order is the record type of the "orders" stream. The CLI decodes JSON
// records into it; the stream encodes it with msgpack.
type Order struct {
	ID       int64   `json:"id" msgpack:"id"`
	Customer string  `json:"customer" msgpack:"customer"`
	Amount   float64 `json:"amount" msgpack:"amount"`
}

func main() { cmd.Main(setup) }

// setup declares the app on the configuration the CLI built from its flags
// and environment.
func setup(cfg app.Config) (*app.App, error) {
	a, err := app.New(cfg)
	if err != nil {
		return nil, err
	}
	if err := declare(a); err != nil {
		a.Close()
		return nil, err
	}
	return a, nil
}

func declare(a *app.App) error { return declareWith(a, newTotals(a)) }

func declareWith(a *app.App, t *totals) error {
	// All orders of a customer go to one partition (of 16, the default), so
	// they are processed one at a time and in the order they were sent.
	orders, err := stream.Declare[Order](a, "orders", stream.KeyField("customer"))
	if err != nil {
		return err
	}
	if err := app.Process(a, orders, "totals", t.process); err != nil {
		return err
	}
	return a.Background("top-customers", func(ctx context.Context) error {
		top, err := t.top(ctx, 5)
		if err != nil {
			return err
		}
		a.Logger().Info("top customers", "top", strings.Join(top, ", "))
		return nil
	}, app.Schedule{Every: 10 * time.Second, LeaderOnly: true})
}

// totals keeps each customer's running total, in cents, in a hash under the
// app's key prefix. Two things could count an order twice, and both are
// ruled out:
//
//   - Delivery is at least once: after a crash or a reset an order may come
//     again. So the hash of last IDs records, per customer, the entry ID of
//     the last order counted, and an order at or below it is skipped. Entry
//     IDs grow within a partition, and all orders of a customer are on one
//     partition, so the comparison is sound.
//   - A worker that paused past its lock expiry in the middle of an order (a
//     long GC pause, SIGSTOP) may resume and write after another worker took
//     its partition over. So the write is fenced (Events.Fenced): Redis
//     applies it only while this worker still holds the partition.
//
// (The two hashes share the app's hash tag. On Redis Cluster, where a fenced
// write must stay in the partition's slot, keep per-partition hashes named
// with Events.LocalKey instead.)
type totals struct {
	client redis.UniversalClient
	keys   []string // totals, last IDs: one hash tag, so one script may use both

	// beforeWrite, when set, is called before each order's write and
	// afterWrite after it; the tests use them to stall a worker mid-event.
	beforeWrite func(Order)
	afterWrite  func(Order, error)
}

func newTotals(a *app.App) *totals {
	cfg := a.Config()
	return &totals{client: a.Client(), keys: []string{
		fmt.Sprintf("%s:orders-totals:{%s}", cfg.KeyPrefix, cfg.Name),
		fmt.Sprintf("%s:orders-last:{%s}", cfg.KeyPrefix, cfg.Name),
	}}
}

// addScript adds an order to its customer's total unless it was counted.
//
// KEYS[1]  totals hash: customer -> total in cents
// KEYS[2]  last IDs hash: customer -> entry ID of the last order counted
// ARGV[1]  customer
// ARGV[2]  entry ID of the order
// ARGV[3]  amount in cents
//
// Returns 1 when the order was counted, 0 when it was counted before.
//
//go:embed add.lua
var addSrc string

var addScript = redis.NewScript(addSrc)

// process is the processor: it runs for one partition at a time and ranges
// over its orders. Each order is acknowledged when the loop body returns;
// an error stops the loop and goes to the failure policy (by default the
// worker halts, and the order is delivered again after a restart). A write
// refused because the partition moved (stream.ErrNotOwner) ends the call:
// the partition's new owner counts the order.
func (t *totals) process(ctx context.Context, events *stream.Events[Order]) error {
	for e := range events.All() {
		o := e.Record
		if o.Customer == "" || math.IsNaN(o.Amount) || math.IsInf(o.Amount, 0) {
			return fmt.Errorf("order %d (entry %s): invalid customer or amount", o.ID, e.ID)
		}
		cents := int64(math.Round(o.Amount * 100))
		if t.beforeWrite != nil {
			t.beforeWrite(o)
		}
		err := events.Fenced(ctx, func(pipe redis.Pipeliner) error {
			return addScript.Eval(ctx, pipe, t.keys, o.Customer, e.ID, cents).Err()
		})
		if t.afterWrite != nil {
			t.afterWrite(o, err)
		}
		if err != nil {
			return fmt.Errorf("order %d: %w", o.ID, err)
		}
	}
	return nil
}

// total returns a customer's total in cents.
func (t *totals) total(ctx context.Context, customer string) (int64, error) {
	n, err := t.client.HGet(ctx, t.keys[0], customer).Int64()
	if errors.Is(err, redis.Nil) {
		return 0, nil
	}
	return n, err
}

// top returns the n customers with the highest totals as "customer amount",
// highest first. (With many customers, keep a sorted set beside the hash.)
func (t *totals) top(ctx context.Context, n int) ([]string, error) {
	all, err := t.client.HGetAll(ctx, t.keys[0]).Result()
	if err != nil {
		return nil, err
	}
	type entry struct {
		customer string
		cents    int64
	}
	list := make([]entry, 0, len(all))
	for c, v := range all {
		cents, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("total of %s: %w", c, err)
		}
		list = append(list, entry{c, cents})
	}
	slices.SortFunc(list, func(a, b entry) int {
		return cmp.Or(cmp.Compare(b.cents, a.cents), strings.Compare(a.customer, b.customer))
	})
	out := make([]string, 0, n)
	for _, e := range list[:min(n, len(list))] {
		out = append(out, fmt.Sprintf("%s %s", e.customer, money(e.cents)))
	}
	return out, nil
}

// money formats cents as units with two decimals.
func money(cents int64) string {
	sign := ""
	if cents < 0 {
		sign, cents = "-", -cents
	}
	return fmt.Sprintf("%s%d.%02d", sign, cents/100, cents%100)
}
