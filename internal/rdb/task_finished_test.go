package rdb_test

import (
	"strconv"
	"testing"
	"time"

	"github.com/leatdev/leat/internal/rdb"
)

// finished sums the finished-task counters of the last five minutes.
func (f *fixture) finished() int64 {
	f.t.Helper()
	now, err := f.c.Time(f.ctx).Result()
	if err != nil {
		f.t.Fatal(err)
	}
	ks, _ := rdb.FinishedKeys(f.ks.TaskFinishedPrefix("q"), now, 5*time.Minute)
	var n int64
	for _, v := range f.c.MGet(f.ctx, ks...).Val() {
		if s, ok := v.(string); ok {
			x, _ := strconv.ParseInt(s, 10, 64)
			n += x
		}
	}
	return n
}

// Every task reaching a final state is counted once in the finished-task
// counters, whichever script ends it; retries, handbacks and requeues are
// not; a cancellation requested while a task ran wins over its failure,
// and finish.lua says so.
func TestFinishedCounters(t *testing.T) {
	f := newFixture(t)
	var tasks []rdb.NewTask
	for i := range 8 {
		tasks = append(tasks, rdb.NewTask{ID: "t" + strconv.Itoa(i), Payload: []byte(`1`), Retention: time.Hour, MaxRetries: 3})
	}
	f.enqueue(tasks...)
	got := f.fetch("A", 6)
	if len(got) != 6 {
		t.Fatalf("fetched %d", len(got))
	}
	want := map[string]string{rdb.OK: "succeeded", rdb.Retry: "retrying", rdb.Dead: "dead", rdb.Fail: "failed", rdb.Handback: "pending"}
	kinds := []string{rdb.OK, rdb.Retry, rdb.Dead, rdb.Fail, rdb.Handback}
	for i, k := range kinds {
		if s := f.finish("A", got[i], k); s != want[k] {
			t.Fatalf("%s recorded as %q, want %q", k, s, want[k])
		}
	}
	if n := f.finished(); n != 3 {
		t.Fatalf("finished %d after a success, a death and a failure, want 3", n)
	}
	// t5 runs: a cancellation requested meanwhile wins over its retry.
	if _, action, err := rdb.Cancel(f.ctx, f.c, f.keys, got[5].ID); err != nil || action != "signal" {
		t.Fatalf("cancel running: %q, %v", action, err)
	}
	if s := f.finish("A", got[5], rdb.Retry); s != "cancelled" {
		t.Fatalf("retry of a cancelled run recorded as %q", s)
	}
	// t6 is pending: cancelled at once.
	if _, action, err := rdb.Cancel(f.ctx, f.c, f.keys, "t6"); err != nil || action != "cancelled" {
		t.Fatalf("cancel pending: %q, %v", action, err)
	}
	if n := f.finished(); n != 5 {
		t.Fatalf("finished %d after two cancellations, want 5", n)
	}
	// Requeueing the dead task and running it again counts it again.
	if st, err := rdb.Requeue(f.ctx, f.c, f.keys, got[2].ID); err != nil || st != "dead" {
		t.Fatalf("requeue: %q, %v", st, err)
	}
	if n := f.finished(); n != 5 {
		t.Fatalf("finished %d after a requeue, want 5", n)
	}
	for _, g := range f.fetch("B", 10) {
		f.finish("B", g, rdb.OK)
	}
	// t2 (requeued), t4 (handed back) and t7 succeeded.
	if n := f.finished(); n != 8 {
		t.Fatalf("finished %d, want 8", n)
	}
	if ttl := f.c.PTTL(f.ctx, f.ks.TaskFinishedPrefix("q")+strconv.FormatInt(time.Now().Unix()/10, 10)).Val(); ttl <= 0 || ttl > rdb.FinishedKeep {
		// the bucket may have just turned: then the key of the last one holds the TTL
		if ttl = f.c.PTTL(f.ctx, f.ks.TaskFinishedPrefix("q")+strconv.FormatInt(time.Now().Unix()/10-1, 10)).Val(); ttl <= 0 || ttl > rdb.FinishedKeep {
			t.Fatalf("counter TTL %v", ttl)
		}
	}
}

// The counters read for a window cover the current bucket and whole ones
// before it, at most window long and longer than window minus a bucket.
func TestFinishedKeys(t *testing.T) {
	for _, tc := range []struct {
		now    time.Time
		window time.Duration
		keys   int
		span   time.Duration
	}{
		{time.Unix(1000, 0), time.Minute, 7, time.Minute},      // on a bucket's start
		{time.Unix(1003, 0), time.Minute, 6, 53 * time.Second}, // 3 s into a bucket
		{time.Unix(1009, 999e6), time.Minute, 6, 59*time.Second + 999*time.Millisecond},
		{time.Unix(1003, 0), 5 * time.Minute, 30, 293 * time.Second},
	} {
		ks, start := rdb.FinishedKeys("p:", tc.now, tc.window)
		if len(ks) != tc.keys || tc.now.Sub(start) != tc.span {
			t.Errorf("at %v for %v: %d keys from %v (span %v), want %d keys, span %v", tc.now.Unix(), tc.window, len(ks), start.Unix(), tc.now.Sub(start), tc.keys, tc.span)
		}
		if ks[len(ks)-1] != "p:"+strconv.FormatInt(tc.now.Unix()/10, 10) {
			t.Errorf("last key %q", ks[len(ks)-1])
		}
	}
}
