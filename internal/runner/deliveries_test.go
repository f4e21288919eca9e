package runner

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/leatdev/leat/executor"
	"github.com/leatdev/leat/internal/lease"
	"github.com/leatdev/leat/internal/tools/redistest"

	"github.com/leatdev/leat/internal/core"
)

// Deliveries counts the times the processor was given an entry: entries
// handed out after a rejection in a batch, or not handed out because the
// lock could not be trusted, were not given and do not count.
func TestDeliveriesCountWhatWasGiven(t *testing.T) {
	p := testPartition(t, 6)

	// A batch cut short: 1-0 done, 1-1 rejected (undecodable), 1-2 never
	// reached the processor.
	ds := p.Next(3, 0)
	if idsOf(ds) != "[1-0 1-1 1-2]" {
		t.Fatalf("batch %s", idsOf(ds))
	}
	p.Done(ds[:1])
	p.Reject(ds[1:2], errors.New("undecodable"))
	p.halted = false
	if ds := p.Next(1, 0); idsOf(ds) != "[1-2]" || ds[0].Deliveries != 1 {
		t.Fatalf("after a cut batch: %s with %d deliveries, want 1-2 first given", idsOf(ds), ds[0].Deliveries)
	}
	// 1-2 was given: offered again (a retry), it counts.
	if ds := p.Next(2, 0); idsOf(ds) != "[1-2]" || ds[0].Deliveries != 2 {
		t.Fatalf("retry: %s with %d deliveries, want 1-2 given a second time", idsOf(ds), ds[0].Deliveries)
	}
	p.Done(p.pending[:1])

	// Not handed out while the lock is not trusted.
	trusted := p.trust
	p.trust = lease.NewTrust(p.life, lease.Now()-1)
	if ds := p.Next(2, 0); ds != nil {
		t.Fatalf("handed out %s without trust", idsOf(ds))
	}
	p.trust = trusted // (not a real sequence: it checks that the refused offer counted nothing)
	ds = p.Next(2, 0)
	if idsOf(ds) != "[1-3 1-4]" || ds[0].Deliveries != 1 || ds[1].Deliveries != 1 {
		t.Fatalf("%s with %d, %d deliveries, want first deliveries", idsOf(ds), ds[0].Deliveries, ds[1].Deliveries)
	}
}

// Entries an executor read but never handed out before releasing the
// partition are not redelivered to the next owner; an entry it was given
// and did not finish is, once.
func TestReleaseKeepsDeliveryCounts(t *testing.T) {
	t.Parallel()
	r := newRig(t, 1, 1000)
	r.send(0, 20)
	given := make(chan string, 1)
	a := r.executor("p", executor.Options{Prefetch: 10, Grace: 100 * time.Millisecond}, func(ctx context.Context, feed core.Feed) error {
		ds := feed.Next(1, 0)
		if len(ds) == 0 {
			return nil
		}
		feed.Done(ds)
		if ds = feed.Next(1, 0); len(ds) == 0 {
			return nil
		}
		given <- ds[0].ID
		<-ctx.Done() // never finishes it
		return ctx.Err()
	})
	stopA := r.run(a)
	var unfinished string
	select {
	case unfinished = <-given:
	case <-time.After(10 * time.Second):
		t.Fatal("no event handed out")
	}
	redistest.Eventually(t, 10*time.Second, "the buffer filled", func() bool {
		return r.consumers(0, "p")[a.ID()] >= 9
	})
	if err := stopA(); err != nil {
		t.Fatal(err)
	}

	seen := make(chan core.Delivery, 20)
	b := r.executor("p", executor.Options{}, func(ctx context.Context, feed core.Feed) error {
		for {
			ds := feed.Next(1, 0)
			if len(ds) == 0 {
				return nil
			}
			seen <- ds[0]
			feed.Done(ds)
		}
	})
	r.run(b)
	for range 19 {
		var d core.Delivery
		select {
		case d = <-seen:
		case <-time.After(10 * time.Second):
			t.Fatal("events not processed by the next owner")
		}
		want := int64(1)
		if d.ID == unfinished {
			want = 2
		}
		if d.Deliveries != want {
			t.Errorf("entry %s: %d deliveries, want %d", d.ID, d.Deliveries, want)
		}
	}
}
