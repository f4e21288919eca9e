package task_test

import (
	"context"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/leatdev/leat/task"
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
	eventually(t, 20*time.Second, "all ran", func() bool { return ran.Load() == 20 })
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
