package main

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/leatdev/leat/app"
	"github.com/leatdev/leat/cmd"
	"github.com/leatdev/leat/internal/tools/redistest"
)

func TestMain(m *testing.M) { redistest.Main(m) }

// The example's worker, run by its CLI, enriches every order with its
// customer, including orders sent before their customer was committed
// (tried again until it is), and keeps exact per-customer sums; the
// CLI prints an enriched value.
func TestEnrich(t *testing.T) {
	c, prefix := redistest.Client(t)
	global := []string{"enrich", "--redis", redistest.URL(t), "--prefix", prefix, "--app", "shop"}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	a, err := app.New(app.Config{Name: "shop", Client: c, KeyPrefix: prefix})
	if err != nil {
		t.Fatal(err)
	}
	s, err := declare(a)
	if err != nil {
		t.Fatal(err)
	}

	workerCtx, stopWorker := context.WithCancel(ctx)
	done := make(chan int, 1)
	var werr bytes.Buffer
	go func() {
		args := append(global, "worker", "--read-block", "200ms", "--grace", "2s", "--lock-expiry", "2s")
		done <- cmd.Run(workerCtx, setup, args, strings.NewReader(""), &bytes.Buffer{}, &werr)
	}()
	defer func() {
		stopWorker()
		if st := <-done; st != 0 {
			t.Errorf("worker: status %d: %s", st, werr.String())
		}
	}()

	const customers, orders = 20, 2000
	var cs []Customer
	for i := range customers {
		cs = append(cs, Customer{ID: fmt.Sprintf("c-%d", i), Name: fmt.Sprintf("Customer %d", i), Tier: []string{"gold", "silver"}[i%2]})
	}
	// Half the customers first; the other half's orders wait for theirs.
	if _, err := s.customers.SendMany(ctx, cs[:customers/2]); err != nil {
		t.Fatal(err)
	}
	want := map[string]Spend{}
	var os []Order
	for i := range orders {
		cu := cs[i%customers]
		o := Order{ID: int64(i), Customer: cu.ID, Cents: int64(100 + i%37)}
		os = append(os, o)
		w := want[cu.ID]
		w.Name, w.Tier, w.Orders, w.Cents = cu.Name, cu.Tier, w.Orders+1, w.Cents+o.Cents
		want[cu.ID] = w
	}
	if _, err := s.orders.SendMany(ctx, os); err != nil {
		t.Fatal(err)
	}
	if _, err := s.customers.SendMany(ctx, cs[customers/2:]); err != nil {
		t.Fatal(err)
	}
	redistest.Eventually(t, time.Minute, "every customer's spending", func() bool {
		for id, w := range want {
			got, _, err := s.spend.Get(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			if got != w {
				return false
			}
		}
		return true
	})

	var out, errs bytes.Buffer
	if st := cmd.Run(ctx, setup, append(global, "table", "enrich", "spend", "c-3"), strings.NewReader(""), &out, &errs); st != 0 {
		t.Fatalf("table: status %d: %s", st, errs.String())
	}
	t.Logf("leat table enrich spend c-3:\n%s", out.String())
	if !strings.Contains(out.String(), `"name":"Customer 3"`) || !strings.Contains(out.String(), `"tier":"silver"`) {
		t.Errorf("leat table enrich spend c-3:\n%s", out.String())
	}
}
