package leattest_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/leatdev/leat/app"
	"github.com/leatdev/leat/leattest"
	"github.com/leatdev/leat/stream"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

type order struct {
	ID       int    `msgpack:"id"`
	Customer string `msgpack:"customer"`
}

var errFlaky = errors.New("flaky dependency")

// The real runtime underneath: a failing event is retried in place, then
// dead-lettered; the others are acknowledged; what a processor sends on is
// read back.
func TestRetriesDeadLettersAndOutputs(t *testing.T) {
	k := leattest.New(t)
	failures := map[int]int{}
	var mu sync.Mutex
	a := k.App(func(cfg app.Config) (*app.App, error) {
		a, err := app.New(cfg)
		if err != nil {
			return nil, err
		}
		in, err := stream.Declare[order](a, "orders", stream.KeyField("customer"), stream.Partitions(4))
		if err != nil {
			return nil, err
		}
		out, err := stream.Declare[order](a, "shipped", stream.KeyField("customer"), stream.Partitions(2))
		if err != nil {
			return nil, err
		}
		return a, app.Process(a, in, "ship", func(ctx context.Context, events *stream.Events[order]) error {
			for e := range events.All() {
				mu.Lock()
				switch {
				case e.Record.ID == 2 && failures[2] == 0: // fails once, then works
					failures[2]++
					mu.Unlock()
					return errFlaky
				case e.Record.ID == 3: // always fails
					mu.Unlock()
					return fmt.Errorf("order %d: %w", e.Record.ID, errFlaky)
				}
				mu.Unlock()
				if _, err := out.Send(ctx, e.Record); err != nil {
					return err
				}
			}
			return nil
		}, app.Retries(2), app.Backoff(time.Millisecond, time.Millisecond), app.OnError(app.DeadLetter))
	})
	orders := leattest.Stream[order](k, a, "orders")
	leattest.Send(k, orders, order{1, "c-1"}, order{2, "c-2"}, order{3, "c-3"}, order{4, "c-1"})
	w := k.Start(a)
	w.WaitIdle()
	if err := w.Stop(); err != nil {
		t.Fatal(err)
	}

	shipped := leattest.Records(k, leattest.Stream[order](k, a, "shipped"))
	ids := map[int]bool{}
	for _, e := range shipped {
		ids[e.Record.ID] = true
	}
	if len(shipped) != 3 || !ids[1] || !ids[2] || !ids[4] {
		t.Fatalf("shipped %+v, want orders 1, 2 and 4 once each", shipped)
	}
	dead := leattest.DeadLetters(k, a, orders, "ship")
	if len(dead) != 1 || dead[0].Record.ID != 3 || dead[0].Error != "order 3: flaky dependency" || dead[0].Deliveries != 3 {
		t.Fatalf("dead letters %+v, want order 3 after 3 deliveries", dead)
	}
	// Order 2 failed once; order 3 three times (the first try and 2 retries).
	if n := len(k.Failures("ship")); n != 4 {
		t.Fatalf("%d failures recorded, want 4", n)
	}
	if n := k.Processed("orders/ship"); n != 3 {
		t.Fatalf("%d events processed, want 3", n)
	}
}

// A lock lost in the middle of a batch: the processor sees its context end,
// the batch is not acknowledged, and it is handed out again (to the same
// worker, which takes the lock again) and processed.
func TestLockLossInTheMiddleOfABatch(t *testing.T) {
	k := leattest.New(t)
	var lost atomic.Bool
	var mu sync.Mutex
	seen := map[int][]int64{} // order -> deliveries seen
	var kit = k
	var theApp *app.App
	a := k.App(func(cfg app.Config) (*app.App, error) {
		a, err := app.New(cfg)
		if err != nil {
			return nil, err
		}
		theApp = a
		in, err := stream.Declare[order](a, "orders", stream.KeyField("customer"), stream.Partitions(1))
		if err != nil {
			return nil, err
		}
		return a, app.Process(a, in, "bulk", func(ctx context.Context, events *stream.Events[order]) error {
			for batch := range events.Batches(10, 100*time.Millisecond) {
				for _, e := range batch {
					mu.Lock()
					seen[e.Record.ID] = append(seen[e.Record.ID], e.Deliveries)
					mu.Unlock()
				}
				if !lost.Swap(true) {
					kit.LoseLock(theApp, "orders", "bulk", 0)
					<-ctx.Done() // an expiry would end it too
					return ctx.Err()
				}
			}
			return nil
		})
	})
	orders := leattest.Stream[order](k, a, "orders")
	leattest.Send(k, orders, order{1, "c"}, order{2, "c"}, order{3, "c"})
	w := k.Start(a)
	w.WaitIdle()
	if err := w.Stop(); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	for id := 1; id <= 3; id++ {
		if got := seen[id]; len(got) != 2 || got[0] != 1 || got[1] != 2 {
			t.Errorf("order %d delivered %v, want twice: the batch cut by the lock loss, then again", id, got)
		}
	}
	if k.LocksLost() == 0 {
		t.Error("no lock loss recorded")
	}
}

// Interval and cron tasks follow the kit's clock.
func TestBackgroundTasksOnTheKitsClock(t *testing.T) {
	k := leattest.New(t)
	var hourly, daily atomic.Int64
	a := k.App(func(cfg app.Config) (*app.App, error) {
		a, err := app.New(cfg)
		if err != nil {
			return nil, err
		}
		err = a.Background("hourly", func(ctx context.Context) error { hourly.Add(1); return nil }, app.Schedule{Every: time.Hour})
		if err == nil {
			err = a.Background("nightly", func(ctx context.Context) error { daily.Add(1); return nil },
				app.Schedule{Cron: "0 3 * * *", LeaderOnly: true})
		}
		return a, err
	})
	w := k.Start(a)
	k.WaitScheduled(2) // the interval task ran at start; both wait for their next time
	if n := hourly.Load(); n != 1 {
		t.Fatalf("hourly ran %d times at start, want 1", n)
	}
	start := k.Now()
	k.Advance(time.Hour)
	k.WaitScheduled(2)
	if n := hourly.Load(); n != 2 {
		t.Fatalf("hourly ran %d times after an hour, want 2", n)
	}
	next3am := time.Date(start.Year(), start.Month(), start.Day(), 3, 0, 0, 0, start.Location())
	if !next3am.After(start) {
		next3am = next3am.AddDate(0, 0, 1)
	}
	k.Advance(next3am.Sub(k.Now()))
	k.WaitScheduled(2)
	if n := daily.Load(); n != 1 {
		t.Fatalf("the nightly task ran %d times at 3am, want 1", n)
	}
	if err := w.Stop(); err != nil {
		t.Fatal(err)
	}
}
