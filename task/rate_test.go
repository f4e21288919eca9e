package task_test

import (
	"context"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/leatdev/leat/internal/rdb"
	"github.com/leatdev/leat/internal/tools/redistest"
	"github.com/leatdev/leat/task"
	"github.com/redis/go-redis/v9"
)

// A queue's rate limit holds over two workers: no fixed window holds more
// starts than the limit, and the workers take the next window's tasks as
// it opens (20 tasks at 5 per window need 4 windows, not many more).
func TestQueueRate(t *testing.T) {
	e := newEnv(t)
	ctx := ctxT(t)
	const window = 400 * time.Millisecond
	var ran atomic.Int32
	var q *task.Queue[job, out]
	for _, id := range []string{"w1", "w2"} {
		a := e.app(id)
		var err error
		q, err = task.Handle(a, "rated", func(ctx context.Context, tk *task.Task[job]) (out, error) {
			ran.Add(1)
			return out{}, nil
		}, task.Rate(5, window), task.Concurrency(4))
		if err != nil {
			t.Fatal(err)
		}
		e.run(a)
	}
	if d := q.Definition(); d.Rate != 5 || d.RateWindow != window {
		t.Fatalf("definition %+v", d)
	}
	var ids []string
	for n := range 20 {
		id, err := q.Enqueue(ctx, job{N: n})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	redistest.Eventually(t, 20*time.Second, "all ran", func() bool { return ran.Load() == 20 })
	var starts []time.Time
	for _, id := range ids {
		in, err := q.Wait(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		starts = append(starts, in.StartedAt)
	}
	checkWindows(t, "the queue", starts, window, 5)
	if _, err := task.Declare[job, out](e.app("x"), "bad", task.Rate(0, time.Second)); err == nil {
		t.Fatal("a rate of 0 accepted")
	}
}

// checkWindows checks starts (the StartedAt of what a rate limit of limit
// per window let start) against fixed windows: one opens at the first
// start after the last one closed, and none holds more than limit starts.
// The next window's tasks start as it opens: len(starts)/limit windows take
// not much more than their length.
func checkWindows(t *testing.T, what string, starts []time.Time, window time.Duration, limit int) {
	t.Helper()
	slices.SortFunc(starts, time.Time.Compare)
	for i := 0; i < len(starts); {
		open, n := starts[i], 0
		for ; i < len(starts) && starts[i].Sub(open) < window; i++ {
			n++
		}
		if n > limit {
			t.Errorf("%s: %d tasks started in the window opened at %s, limit %d: %v", what, n, open.Format(time.StampMilli), limit, starts)
		}
	}
	windows := (len(starts) + limit - 1) / limit
	if span := starts[len(starts)-1].Sub(starts[0]); span > time.Duration(windows)*window+2*time.Second {
		t.Errorf("%s: %d tasks took %s", what, len(starts), span)
	}
}

// A rate set live applies to running workers at once, in place of their
// programs' (none here): tasks a worker's blocking read got beyond the
// live budget stay pending with it and run once the limit is lifted, which
// wakes the worker waiting out its hour-long window. ClearRate removes it.
func TestLiveRate(t *testing.T) {
	t.Parallel()
	// a server of its own: the test waits for its worker's blocking read
	e := &env{t: t, client: redistest.Start(t).Client(t), prefix: "live"}
	ctx := ctxT(t)
	a := e.app("w1")
	var ran atomic.Int32
	q, err := task.Handle(a, "live", func(ctx context.Context, tk *task.Task[job]) (out, error) {
		ran.Add(1)
		return out{}, nil
	}, task.Concurrency(4))
	if err != nil {
		t.Fatal(err)
	}
	for _, bad := range []struct {
		n int
		w time.Duration
	}{{-1, time.Second}, {1, 0}, {1, time.Microsecond}, {0, time.Second}} {
		if err := q.SetRate(ctx, bad.n, bad.w); err == nil {
			t.Errorf("SetRate(%d, %s) accepted", bad.n, bad.w)
		}
	}
	if _, set, err := q.LiveRate(ctx); err != nil || set {
		t.Fatalf("a live rate before SetRate: %v, %v", set, err)
	}
	if err := q.SetRate(ctx, 1, time.Hour); err != nil {
		t.Fatal(err)
	}
	if r, set, err := q.LiveRate(ctx); err != nil || !set || r != (task.RateLimit{N: 1, Window: time.Hour}) {
		t.Fatalf("LiveRate: %+v, set %v, %v", r, set, err)
	}
	if s, err := q.Summary(ctx); err != nil || !s.LiveRate || s.Rate != (task.RateLimit{N: 1, Window: time.Hour}) {
		t.Fatalf("Summary's rate: %+v, %v", s, err)
	}
	e.run(a)
	redistest.Eventually(t, 10*time.Second, "the worker waiting in its blocking read", func() bool {
		return redistest.Blocked(t, e.client, "xreadgroup") > 0
	})
	if _, err := q.EnqueueMany(ctx, []job{{N: 1}, {N: 2}, {N: 3}}); err != nil {
		t.Fatal(err)
	}
	redistest.Eventually(t, 10*time.Second, "one task run, two held back", func() bool {
		n, err := q.Counts(ctx)
		return err == nil && ran.Load() == 1 && n[task.Succeeded] == 1 && n[task.Pending] == 2
	})
	if err := q.SetRate(ctx, 0, 0); err != nil { // no limit: the hour's window is not waited out
		t.Fatal(err)
	}
	redistest.Eventually(t, 10*time.Second, "the held-back tasks run", func() bool { return ran.Load() == 3 })
	if r, set, err := q.LiveRate(ctx); err != nil || !set || r.N != 0 {
		t.Fatalf("LiveRate after lifting: %+v, set %v, %v", r, set, err)
	}
	if err := q.ClearRate(ctx); err != nil {
		t.Fatal(err)
	}
	if _, set, err := q.LiveRate(ctx); err != nil || set {
		t.Fatalf("a live rate after ClearRate: %v, %v", set, err)
	}
	checkCounts(t, e, "live", map[task.State]int64{task.Succeeded: 3})
}

// holdGiven is a go-redis hook that, once armed, holds the next given
// fetch call (the one after a blocking read) until an own call (the
// recovery of the worker's pending entries) completed, or for at most
// max, and says when it holds it, and when the worker read its live rate.
type holdGiven struct {
	armed    atomic.Bool
	watch    atomic.Bool   // readLive counts reads from now on
	held     chan struct{} // closed when a given call is held
	ownDone  chan struct{} // closed when an own call completed
	readLive chan struct{} // closed when the worker read its live settings after armed
	max      time.Duration
	own, rd  sync.Once
}

func (h *holdGiven) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h *holdGiven) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		mode := ""
		for _, a := range cmd.Args() {
			if a == "given" || a == "own" {
				mode = a.(string)
			}
		}
		if mode == "given" && h.armed.CompareAndSwap(true, false) {
			close(h.held)
			select {
			case <-h.ownDone:
			case <-time.After(h.max):
			}
		}
		err := next(ctx, cmd)
		switch {
		case mode == "own":
			h.own.Do(func() { close(h.ownDone) })
		}
		return err
	}
}
func (h *holdGiven) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// A worker recovering its own pending entries (FetchOwn: here because a
// rate limit it did not know of was set live) waits for the entries its
// other fetcher's blocking read got and has not yet taken (a given call
// under way): taking them, it would start their tasks, and the given call
// would then hand them out again, as its own earlier run's, so they would
// run twice. (A fetcher holds every slot free when it fetches: the
// recovering one gets slots when two long tasks end meanwhile.)
func TestRecoveryWaitsForGivenEntries(t *testing.T) {
	t.Parallel()
	// a server of its own: the test counts its worker's blocking reads
	srv := redistest.Start(t)
	e := &env{t: t, client: srv.Client(t), prefix: "held"}
	hold := &holdGiven{held: make(chan struct{}), ownDone: make(chan struct{}), readLive: make(chan struct{}), max: time.Second}
	// the worker reads its live settings on a client of its own: seen by
	// MONITOR, not by the hook
	stopMonitor := redistest.Monitor(t, srv.Addr, func(line string) {
		if hold.watch.Load() && strings.Contains(line, `"hmget"`) && strings.Contains(line, `"`+rdb.RateField+`"`) {
			hold.rd.Do(func() { close(hold.readLive) })
		}
	})
	defer stopMonitor()
	e.client.AddHook(hold)
	ctx := ctxT(t)
	a := e.app("w1")
	var mu sync.Mutex
	runs := map[string]int{}
	long := make(chan struct{})
	q, err := task.Handle(a, "held", func(ctx context.Context, tk *task.Task[job]) (out, error) {
		mu.Lock()
		runs[tk.ID]++
		mu.Unlock()
		if tk.Payload.N == 0 {
			<-long
		}
		return out{}, nil
	}, task.Concurrency(4)) // two fetchers
	if err != nil {
		t.Fatal(err)
	}
	e.run(a)
	ran := func(ids ...string) func() bool {
		return func() bool {
			mu.Lock()
			defer mu.Unlock()
			for _, id := range ids {
				if runs[id] == 0 {
					return false
				}
			}
			return true
		}
	}
	longs, err := q.EnqueueMany(ctx, []job{{N: 0}, {N: 0}}) // two slots held
	if err != nil {
		t.Fatal(err)
	}
	redistest.Eventually(t, 10*time.Second, "two long tasks running, a fetcher in a blocking read", func() bool {
		return ran(longs...)() && redistest.Blocked(t, e.client, "xreadgroup") == 1
	})
	hold.armed.Store(true)
	id, err := q.Enqueue(ctx, job{N: 1}) // read by that fetcher, its given call held
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-hold.held:
	case <-time.After(10 * time.Second):
		t.Fatal("no given call for the task")
	}
	if err := q.SetRate(ctx, 100, time.Hour); err != nil { // a limit the worker did not know of: it recovers
		t.Fatal(err)
	}
	hold.watch.Store(true) // the next read of the settings sees the rate (one may have, already)
	select {
	case <-hold.readLive:
	case <-time.After(10 * time.Second):
		t.Fatal("the worker did not read its live settings")
	}
	close(long) // two slots free: the recovering fetcher takes them
	redistest.Eventually(t, 10*time.Second, "the task run", ran(id))
	checkCounts(t, e, "held", map[task.State]int64{task.Succeeded: 3})
	mu.Lock()
	defer mu.Unlock()
	for id, n := range runs {
		if n != 1 {
			t.Errorf("task %s ran %d times", id, n)
		}
	}
}
