package leattest_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/leatdev/leat/app"
	"github.com/leatdev/leat/leattest"
	"github.com/leatdev/leat/stream"
)

// A processor's table runs on the kit as in production: values written
// with each event's acknowledgement, a failed run's writes dropped, values
// read back with Table.Get.
func TestTables(t *testing.T) {
	k := leattest.New(t)
	var totals *stream.Table[int]
	var once sync.Once
	a := k.App(func(cfg app.Config) (*app.App, error) {
		a, err := app.New(cfg)
		if err != nil {
			return nil, err
		}
		in, err := stream.Declare[order](a, "orders", stream.KeyField("customer"), stream.Partitions(4))
		if err != nil {
			return nil, err
		}
		totals, err = stream.DeclareTable[int](in, "total", "totals")
		if err != nil {
			return nil, err
		}
		return a, app.Process(a, in, "total", func(ctx context.Context, events *stream.Events[order]) error {
			st := totals.In(events)
			for e := range events.All() {
				n, _, err := st.Get(ctx, e.Record.Customer)
				if err != nil {
					return err
				}
				if err := st.Set(e.Record.Customer, n+e.Record.ID); err != nil {
					return err
				}
				failed := false
				if e.Record.ID == 2 {
					once.Do(func() { failed = true })
				}
				if failed {
					return errors.New("fails once, after writing")
				}
			}
			return nil
		}, app.Retries(2), app.Backoff(time.Millisecond, time.Millisecond))
	})
	orders := leattest.Stream[order](k, a, "orders")
	leattest.Send(k, orders, order{1, "c-1"}, order{2, "c-2"}, order{3, "c-1"}, order{4, "c-2"})
	w := k.Start(a)
	w.WaitIdle()
	if err := w.Stop(); err != nil {
		t.Fatal(err)
	}
	want := map[string]int{"c-1": 4, "c-2": 6}
	for customer, want := range want {
		got, ok, err := totals.Get(context.Background(), customer)
		if err != nil || !ok || got != want {
			t.Errorf("%s: total %d (ok %v, err %v), want %d", customer, got, ok, err, want)
		}
	}
	scanned := map[string]int{}
	if err := totals.Scan(context.Background(), func(k string, n int) error { scanned[k] = n; return nil }); err != nil || len(scanned) != 2 ||
		scanned["c-1"] != want["c-1"] || scanned["c-2"] != want["c-2"] {
		t.Errorf("Scan: %v (%v), want %v", scanned, err, want)
	}
}
