package runner

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"testing"
	"testing/synctest"
	"time"

	"github.com/leatdev/leat/executor"
	"github.com/leatdev/leat/internal/core"
	"github.com/leatdev/leat/internal/lease"
	"github.com/leatdev/leat/internal/rdb"
)

// testPartition returns a partition with a trusted lock and n deliveries in
// its buffer, without Redis.
func testPartition(t *testing.T, n int) *partition {
	t.Helper()
	opts, _ := executor.Options{Prefetch: 64, Grace: time.Second}.WithDefaults()
	s, err := core.Open(core.NewCatalog(nil, rdb.NewKeySpace("", "t"), core.Defaults{}, nil),
		core.Definition{Name: "s", Partitions: 1, KeyField: "k", Size: 10, Codec: "msgpack"})
	if err != nil {
		t.Fatal(err)
	}
	e := &Executor{stream: s, opts: opts, log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	e.fetch = newFetcher(e)
	e.acks = newAcker(nil, "g", e.log)
	p := e.newPartition(context.Background(), 0)
	t.Cleanup(func() { p.cancel(nil) })
	p.trust = lease.NewTrust(p.life, lease.Now()+int64(time.Hour))
	for i := range n {
		p.buf <- core.Delivery{Entry: core.Entry{ID: fmt.Sprintf("1-%d", i)}, Deliveries: 1}
	}
	return p
}

func idsOf(ds []core.Delivery) string { return fmt.Sprint(ids(ds)) }

func TestFeedHandsOutInOrderAndAcks(t *testing.T) {
	p := testPartition(t, 5)
	for i := range 5 {
		ds := p.Next(1, 0)
		if len(ds) != 1 || ds[0].ID != fmt.Sprintf("1-%d", i) {
			t.Fatalf("Next = %s, want 1-%d", idsOf(ds), i)
		}
		p.Done(ds)
	}
	if got := p.e.acks.pending[p.key]; len(got) != 5 || got[4] != "1-4" {
		t.Fatalf("acks queued %v", got)
	}
}

func TestFeedReoffersUnfinishedInPlace(t *testing.T) {
	p := testPartition(t, 5)
	first := p.Next(3, 0) // a batch that is not done (the processor failed)
	if idsOf(first) != "[1-0 1-1 1-2]" {
		t.Fatalf("first batch %s", idsOf(first))
	}
	again := p.Next(3, 0)
	if idsOf(again) != "[1-0 1-1 1-2]" || again[0].Deliveries != 2 {
		t.Fatalf("re-offered %s (deliveries %d), want the same batch delivered twice", idsOf(again), again[0].Deliveries)
	}
	p.Done(again)
	if rest := p.Next(10, 0); idsOf(rest) != "[1-3 1-4]" {
		t.Fatalf("rest %s", idsOf(rest))
	}
}

// Batch gathering on a fake clock: a batch that does not fill is handed
// out exactly when its window ends, with what arrived meanwhile; a full one
// at once.
func TestFeedBatchWaitsWithin(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := testPartition(t, 2)
		start := time.Now()
		go func() {
			time.Sleep(30 * time.Millisecond)
			p.buf <- core.Delivery{Entry: core.Entry{ID: "1-2"}, Deliveries: 1}
		}()
		ds := p.Next(10, 50*time.Millisecond)
		if idsOf(ds) != "[1-0 1-1 1-2]" {
			t.Fatalf("batch %s, want the 2 buffered and the one that came within the window", idsOf(ds))
		}
		if waited := time.Since(start); waited != 50*time.Millisecond {
			t.Fatalf("handed out after %s, want at the end of the 50ms window", waited)
		}
		p.Done(ds)
		for i := range 3 {
			p.buf <- core.Delivery{Entry: core.Entry{ID: fmt.Sprintf("2-%d", i)}, Deliveries: 1}
		}
		start = time.Now()
		if ds := p.Next(3, time.Hour); len(ds) != 3 || time.Since(start) != 0 {
			t.Fatalf("a full batch: %s after %s, want at once", idsOf(ds), time.Since(start))
		}
	})
}

// Retries back off exponentially with jitter in [d/2, d], capped, and a
// RetryAfter sets the wait exactly.
func TestRetryBackoff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := testPartition(t, 0)
		p.e.opts.Retry = executor.Retry{Attempts: 6, Backoff: 100 * time.Millisecond, MaxBackoff: time.Second}
		for attempt, full := range []time.Duration{100, 200, 400, 800, 1000, 1000} {
			full *= time.Millisecond
			start := time.Now()
			if !p.retry("1-0", errors.New("boom")) {
				t.Fatalf("attempt %d refused", attempt+1)
			}
			if d := time.Since(start); d < full/2 || d > full {
				t.Errorf("attempt %d waited %s, want between %s and %s", attempt+1, d, full/2, full)
			}
		}
		if p.retry("1-0", errors.New("boom")) {
			t.Fatal("a 7th retry with Attempts 6")
		}
		start := time.Now()
		if !p.retry("1-1", executor.RetryAfter(1500*time.Millisecond, errors.New("busy"))) || time.Since(start) != 1500*time.Millisecond {
			t.Fatalf("RetryAfter(1.5s) waited %s", time.Since(start))
		}
	})
}

func TestFeedStopsWhenLockNotTrusted(t *testing.T) {
	p := testPartition(t, 3)
	if ds := p.Next(1, 0); idsOf(ds) != "[1-0]" {
		t.Fatalf("Next = %s", idsOf(ds))
	}
	// Trust ended (a frozen process resuming past its deadline): nothing
	// more is handed out, and the context says so at once.
	p.trust = lease.NewTrust(p.life, lease.Now()-1)
	if p.ctx().Err() == nil || !p.lost() {
		t.Fatal("context not ended with the trust")
	}
	if ds := p.Next(1, 0); ds != nil {
		t.Fatalf("handed out %s without a trusted lock", idsOf(ds))
	}
}

func TestFeedRejectEndsTheCall(t *testing.T) {
	p := testPartition(t, 3)
	ds := p.Next(1, 0)
	p.Reject(ds, core.ErrTrimmed)
	if got := p.Next(1, 0); got != nil {
		t.Fatalf("Next after Reject = %s, want nil until the policy ran", idsOf(got))
	}
	if len(p.rejected) != 1 || p.rejected[0].ID != "1-0" {
		t.Fatalf("rejected %s", idsOf(p.rejected))
	}
}

func TestFeedSoftStop(t *testing.T) {
	p := testPartition(t, 0)
	done := make(chan []core.Delivery)
	go func() { done <- p.Next(1, 0) }()
	p.softStop()
	select {
	case ds := <-done:
		if ds != nil {
			t.Fatalf("Next after stop = %s", idsOf(ds))
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Next did not return on stop")
	}
}

// A trim report goes into the buffer with the next read of new entries,
// whether that read filled the buffer or found nothing, after the entries
// read before it; a recovery read does not take it (its pending entries
// are older than the trimmed ones).
func TestTrimNoticeWithTheNextRead(t *testing.T) {
	p := testPartition(t, 0)
	f := p.e.fetch
	s := &fetchState{p: p}
	f.parts[p.n] = s
	entries := func(from, n int) []core.Delivery {
		ds := make([]core.Delivery, n)
		for i := range ds {
			ds[i] = core.Delivery{Entry: core.Entry{ID: fmt.Sprintf("2-%d", from+i)}, Deliveries: 1}
		}
		return ds
	}
	read := func(cursor string, ds []core.Delivery) {
		f.put(fetchWork{s: s, count: cap(p.buf) - len(p.buf), cursor: cursor}, rdb.FetchResult{Held: true, Cursor: "0-0"}, ds, len(ds), "")
	}
	notice := func() { f.trimmed(p, s.trimReported+3, "2-100") }
	isNotice := func(d core.Delivery) bool { return errors.Is(d.Err, core.ErrTrimmed) }

	notice()
	read("0-0", entries(0, 2)) // recovery
	for _, d := range p.Next(64, 0) {
		if isNotice(d) {
			t.Fatal("a recovery read took the trim report")
		}
	}
	p.Done(p.pending)

	read("", entries(2, cap(p.buf))) // fills the buffer exactly
	got := p.Next(cap(p.buf), 0)
	if len(got) != cap(p.buf) || !isNotice(got[0]) || got[1].ID != "2-2" {
		t.Fatalf("after a full read: %d deliveries, first %v: want the report, then the entries", len(got), got[0])
	}
	p.Done(got)
	s.push(nil) // the overflow, as the fetcher's next round does
	if rest := p.Next(64, 0); len(rest) != 1 || rest[0].ID != fmt.Sprintf("2-%d", 2+cap(p.buf)-1) {
		t.Fatalf("the overflow after the report: %s", idsOf(rest))
	}
	p.Done(p.pending)

	notice()
	read("", nil) // nothing new: the report comes alone
	if got := p.Next(64, 0); len(got) != 1 || !isNotice(got[0]) {
		t.Fatalf("after an empty read: %s, want the report", idsOf(got))
	}
}
