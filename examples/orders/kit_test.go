package main

import (
	"context"
	"errors"
	"testing"

	"github.com/leatdev/leat/app"
	"github.com/leatdev/leat/leattest"
)

// The orders app tested with leat's testing kit: its real Setup, its real
// processor, the real runtime, on an in-process server. No redis-server is
// needed (scripts/test runs this test with none on PATH).
func TestKitTotals(t *testing.T) {
	k := leattest.New(t)
	a := k.App(setup)
	orders := leattest.Stream[Order](k, a, "orders")
	leattest.Send(k, orders,
		Order{ID: 1, Customer: "c-1", Amount: 12.5},
		Order{ID: 2, Customer: "c-2", Amount: 3},
		Order{ID: 3, Customer: "c-1", Amount: 0.25},
	)
	w := k.Start(a)
	w.WaitIdle()
	if err := w.Stop(); err != nil {
		t.Fatal(err)
	}
	tot := newTotals(a)
	for customer, want := range map[string]int64{"c-1": 1275, "c-2": 300} {
		if got, err := tot.total(context.Background(), customer); err != nil || got != want {
			t.Errorf("total of %s: %d cents (%v), want %d", customer, got, err, want)
		}
	}
	// An invalid order goes to the failure policy (halt, by default): the
	// worker stops with the processor's error, the order stays pending.
	leattest.Send(k, orders, Order{ID: 4, Customer: "", Amount: 1})
	w = k.Start(a)
	if err := w.Wait(); !errors.Is(err, app.ErrHalted) {
		t.Fatalf("the worker stopped with %v, want a halt on the invalid order", err)
	}
}
