package task_test

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/leatdev/leat/internal/tools/redistest"
	"github.com/leatdev/leat/task"
)

// transition is what a test expects of an event: the task's new state,
// the one it left and its attempt.
type transition struct {
	state, prev task.State
	attempt     int
}

func (tr transition) String() string {
	return fmt.Sprintf("%s<-%s@%d", tr.state, tr.prev, tr.attempt)
}

// collect follows q's events from since in the background and returns a
// function that reads what it collected so far.
func collect(t *testing.T, ctx context.Context, events func(context.Context, string) iter.Seq2[task.QueueEvent, error], since string) func() []task.QueueEvent {
	t.Helper()
	ctx, cancel := context.WithCancel(ctx)
	got := make(chan task.QueueEvent, 1000)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ev, err := range events(ctx, since) {
			if err != nil {
				if ctx.Err() == nil {
					t.Errorf("events: %v", err)
				}
				return
			}
			got <- ev
		}
	}()
	t.Cleanup(func() { cancel(); <-done })
	var seen []task.QueueEvent
	return func() []task.QueueEvent {
		for {
			select {
			case ev := <-got:
				seen = append(seen, ev)
			default:
				return seen
			}
		}
	}
}

// eventsOf returns the transitions of task id among evs, in order.
func eventsOf(evs []task.QueueEvent, id string) []transition {
	var out []transition
	for _, ev := range evs {
		if ev.Task == id {
			out = append(out, transition{ev.State, ev.Prev, ev.Attempt})
		}
	}
	return out
}

// waitTransitions waits until task id's events are want, failing on any
// other sequence once the deadline passes.
func waitTransitions(t *testing.T, read func() []task.QueueEvent, id string, want ...transition) []task.QueueEvent {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		evs := read()
		got := eventsOf(evs, id)
		if fmt.Sprint(got) == fmt.Sprint(want) {
			return evs
		}
		if len(got) > len(want) || time.Now().After(deadline) {
			t.Fatalf("task %s's events:\n got %v\nwant %v", id, got, want)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestQueueEventsLifecycle: every state change of a task's life appears
// once, in order, with its previous state and attempt, written by the
// scripts that made the change: enqueue, active, retrying (with the
// error), active, succeeded; a task out of retries dead; a cancelled one;
// a delayed one promoted; a requeue; a delete.
func TestQueueEventsLifecycle(t *testing.T) {
	e := newEnv(t)
	ctx := ctxT(t)
	a := e.app("w1")
	var runs atomic.Int32
	q, err := task.Handle(a, "ev", func(ctx context.Context, tk *task.Task[job]) (out, error) {
		switch tk.Payload.N {
		case 1: // fails once, then succeeds
			if runs.Add(1) == 1 {
				return out{}, errors.New("first try " + strings.Repeat("x", 1000))
			}
			return out{Double: 2}, nil
		case 2: // always fails
			return out{}, errors.New("boom")
		}
		return out{Double: tk.Payload.N * 2}, nil
	}, task.MaxRetries(1), task.Backoff(10*time.Millisecond, 20*time.Millisecond), task.Events(0))
	if err != nil {
		t.Fatal(err)
	}
	if n, err := q.EventsCap(ctx); err != nil || n != 0 {
		t.Fatalf("events cap %d, %v before the workers started; want 0 (off)", n, err)
	}
	// The option turns events on when the workers start.
	e.run(a)
	redistest.Eventually(t, 10*time.Second, "events turned on by the workers", func() bool {
		n, err := q.EventsCap(ctx)
		return err == nil && n == task.DefaultEventsCap
	})
	// "$" is where the stream ends when the iteration starts: the test
	// takes that position itself, before any change it waits for.
	last, err := q.LastEventID(ctx)
	if err != nil {
		t.Fatal(err)
	}
	read := collect(t, ctx, q.Events, last)
	// A cancelled task, delayed first.
	cancelled, err := q.Enqueue(ctx, job{N: 3}, task.Delay(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := q.Cancel(ctx, cancelled); err != nil {
		t.Fatal(err)
	}
	waitTransitions(t, read, cancelled,
		transition{task.Scheduled, "", 0},
		transition{task.Cancelled, task.Scheduled, 0})

	flaky, err := q.Enqueue(ctx, job{N: 1})
	if err != nil {
		t.Fatal(err)
	}
	evs := waitTransitions(t, read, flaky,
		transition{task.Pending, "", 0},
		transition{task.Active, task.Pending, 1},
		transition{task.Retrying, task.Active, 1},
		transition{task.Pending, task.Retrying, 1},
		transition{task.Active, task.Pending, 2},
		transition{task.Succeeded, task.Active, 2})
	for _, ev := range evs {
		if ev.Task == flaky && ev.State == task.Retrying {
			if len(ev.Error) != task.EventErrorMax || !strings.HasPrefix(ev.Error, "first try x") {
				t.Errorf("retrying event's error %q (%d bytes), want the error's first %d bytes", ev.Error, len(ev.Error), task.EventErrorMax)
			}
		}
		if ev.Time.IsZero() || time.Since(ev.Time) > time.Minute {
			t.Errorf("event %+v: time %v", ev, ev.Time)
		}
	}

	dead, err := q.Enqueue(ctx, job{N: 2})
	if err != nil {
		t.Fatal(err)
	}
	evs = waitTransitions(t, read, dead,
		transition{task.Pending, "", 0},
		transition{task.Active, task.Pending, 1},
		transition{task.Retrying, task.Active, 1},
		transition{task.Pending, task.Retrying, 1},
		transition{task.Active, task.Pending, 2},
		transition{task.Dead, task.Active, 2})
	if last := evs[len(evs)-1]; last.Error != "boom" {
		t.Errorf("dead event's error %q, want boom", last.Error)
	}
	// Requeued from dead, it fails twice more and is dead again; then
	// deleted.
	if err := q.Requeue(ctx, dead); err != nil {
		t.Fatal(err)
	}
	waitTransitions(t, read, dead,
		transition{task.Pending, "", 0},
		transition{task.Active, task.Pending, 1},
		transition{task.Retrying, task.Active, 1},
		transition{task.Pending, task.Retrying, 1},
		transition{task.Active, task.Pending, 2},
		transition{task.Dead, task.Active, 2},
		transition{task.Pending, task.Dead, 0},
		transition{task.Active, task.Pending, 1},
		transition{task.Retrying, task.Active, 1},
		transition{task.Pending, task.Retrying, 1},
		transition{task.Active, task.Pending, 2},
		transition{task.Dead, task.Active, 2})
	if _, err := q.Delete(ctx, dead); err != nil {
		t.Fatal(err)
	}
	waitTransitions(t, read, dead,
		transition{task.Pending, "", 0},
		transition{task.Active, task.Pending, 1},
		transition{task.Retrying, task.Active, 1},
		transition{task.Pending, task.Retrying, 1},
		transition{task.Active, task.Pending, 2},
		transition{task.Dead, task.Active, 2},
		transition{task.Pending, task.Dead, 0},
		transition{task.Active, task.Pending, 1},
		transition{task.Retrying, task.Active, 1},
		transition{task.Pending, task.Retrying, 1},
		transition{task.Active, task.Pending, 2},
		transition{task.Dead, task.Active, 2},
		transition{task.EventDeleted, task.Dead, 0})

	// A delayed task promoted when due.
	delayed, err := q.Enqueue(ctx, job{N: 4}, task.Delay(50*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	waitTransitions(t, read, delayed,
		transition{task.Scheduled, "", 0},
		transition{task.Pending, task.Scheduled, 0},
		transition{task.Active, task.Pending, 1},
		transition{task.Succeeded, task.Active, 1})

	// The whole history from "0" holds the same events in the same order.
	all := collect(t, ctx, q.Events, "0")
	want := read()
	redistest.Eventually(t, 10*time.Second, "the history read from 0", func() bool { return len(all()) >= len(want) })
	got := all()
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("history event %d: %+v, want %+v", i, got[i], want[i])
		}
	}
}

// TestQueueEventsOff: a queue whose events are off writes none, and
// turning them off live stops them at once; Summary reports the setting.
func TestQueueEventsOff(t *testing.T) {
	e := newEnv(t)
	ctx := ctxT(t)
	a := e.app("w1")
	q, err := task.Declare[job, out](a, "quiet")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := q.Enqueue(ctx, job{N: 1}); err != nil {
		t.Fatal(err)
	}
	if evs, err := q.EventsAfter(ctx, "0", 100); err != nil || len(evs) != 0 {
		t.Fatalf("events of a queue with events off: %v, %v", evs, err)
	}
	capOf := func() int {
		t.Helper()
		sum, err := q.Summary(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return sum.EventsCap
	}
	if n := capOf(); n != 0 {
		t.Fatalf("Summary.EventsCap with events off: %d", n)
	}
	if err := q.SetEvents(ctx, 5); err != nil {
		t.Fatal(err)
	}
	if n := capOf(); n != 5 {
		t.Fatalf("Summary.EventsCap after SetEvents(5): %d", n)
	}
	id, err := q.Enqueue(ctx, job{N: 2})
	if err != nil {
		t.Fatal(err)
	}
	if err := q.SetEvents(ctx, -1); err != nil {
		t.Fatal(err)
	}
	if n := capOf(); n != 0 {
		t.Fatalf("Summary.EventsCap after SetEvents(-1): %d", n)
	}
	if _, err := q.Enqueue(ctx, job{N: 3}); err != nil {
		t.Fatal(err)
	}
	evs, err := q.EventsAfter(ctx, "0", 100)
	if err != nil || len(evs) != 1 || evs[0].Task != id || evs[0].State != task.Pending {
		t.Fatalf("events %+v, %v; want only the pending event of %s", evs, err, id)
	}
	if err := q.SetEvents(ctx, task.MaxEventsCap+1); !errors.Is(err, task.ErrBadSetting) {
		t.Fatalf("SetEvents over the maximum: %v", err)
	}
	for _, bad := range []string{"", "x", "1-2-3", "$0", "-1"} {
		if _, err := q.EventsAfter(ctx, bad, 10); !errors.Is(err, task.ErrBadEventID) {
			t.Errorf("EventsAfter(%q): %v, want ErrBadEventID", bad, err)
		}
	}
}

// TestQueueEventsBounded: the history keeps about its cap of the latest
// events, and a follower resumes from an event's ID without a gap.
func TestQueueEventsBounded(t *testing.T) {
	e := newEnv(t)
	ctx := ctxT(t)
	a := e.app("w1")
	q, err := task.Declare[job, out](a, "bounded")
	if err != nil {
		t.Fatal(err)
	}
	const capN = 100
	if err := q.SetEvents(ctx, capN); err != nil {
		t.Fatal(err)
	}
	ps := make([]job, 1000)
	for i := range ps {
		ps[i].N = i
	}
	ids, err := q.EnqueueMany(ctx, ps)
	if err != nil {
		t.Fatal(err)
	}
	// XADD MAXLEN ~ trims by whole nodes of the stream (100 entries by
	// default): it keeps at least the cap, and less than two nodes more.
	var kept []task.QueueEvent
	after := "0"
	for {
		page, err := q.EventsAfter(ctx, after, 1000)
		if err != nil {
			t.Fatal(err)
		}
		if len(page) == 0 {
			break
		}
		kept = append(kept, page...)
		after = page[len(page)-1].ID
	}
	if len(kept) < capN || len(kept) > capN+200 {
		t.Fatalf("%d events kept of 1000, want about %d", len(kept), capN)
	}
	// The newest are kept, in order.
	for i, ev := range kept {
		if want := ids[len(ids)-len(kept)+i]; ev.Task != want {
			t.Fatalf("kept event %d is of task %s, want %s", i, ev.Task, want)
		}
	}

	// A follower that stopped after an event resumes after it: the next
	// events, none missed and none twice.
	stop := kept[len(kept)/2]
	var resumed []string
	for ev, err := range q.Events(ctx, stop.ID) {
		if err != nil {
			t.Fatal(err)
		}
		resumed = append(resumed, ev.Task)
		if ev.ID == kept[len(kept)-1].ID {
			break
		}
	}
	want := ids[len(ids)-len(kept)+len(kept)/2+1:]
	if fmt.Sprint(resumed) != fmt.Sprint(want) {
		t.Fatalf("resumed after %s: %d events, want the %d after it", stop.ID, len(resumed), len(want))
	}
}

// TestQueueEventsFlow: a flow's child node is created waiting, then
// released to pending when its parent succeeds, each an event.
func TestQueueEventsFlow(t *testing.T) {
	e := newEnv(t)
	ctx := ctxT(t)
	a := e.app("w1")
	q, err := task.Handle(a, "fsteps", func(ctx context.Context, tk *task.Task[job]) (out, error) {
		return out{Double: tk.Payload.N * 2}, nil
	}, task.Events(100))
	if err != nil {
		t.Fatal(err)
	}
	e.run(a)
	redistest.Eventually(t, 10*time.Second, "events turned on by the workers", func() bool {
		n, err := q.EventsCap(ctx)
		return err == nil && n == 100
	})
	f := task.NewFlow(a)
	first := task.AddNode(f, "first", q, job{N: 1})
	task.AddNode(f, "second", q, job{N: 2}).After(first)
	id, err := f.Submit(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := task.WaitFlow(ctx, a, id); err != nil {
		t.Fatal(err)
	}
	evs, err := q.EventsAfter(ctx, "0", 100)
	if err != nil {
		t.Fatal(err)
	}
	got := eventsOf(evs, task.FlowTaskID(id, "second"))
	want := []transition{
		{task.Waiting, "", 0},
		{task.Pending, task.Waiting, 0},
		{task.Active, task.Pending, 1},
		{task.Succeeded, task.Active, 1},
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("the child node's events:\n got %v\nwant %v", got, want)
	}
}

// TestQueueEventsSnoozeAndEdit: a snooze is active -> scheduled (its
// attempt not counted), then promoted; an edit that runs a delayed task now
// is scheduled -> pending, one that delays a pending one pending ->
// scheduled.
func TestQueueEventsSnoozeAndEdit(t *testing.T) {
	e := newEnv(t)
	ctx := ctxT(t)
	a := e.app("w1")
	var runs atomic.Int32
	q, err := task.Handle(a, "snoozy", func(ctx context.Context, tk *task.Task[job]) (out, error) {
		if tk.Payload.N == 1 && runs.Add(1) == 1 {
			return out{}, task.Snooze(30 * time.Millisecond)
		}
		return out{Double: 2}, nil
	}, task.Events(0))
	if err != nil {
		t.Fatal(err)
	}
	if err := q.SetEvents(ctx, 0); err != nil {
		t.Fatal(err)
	}
	read := collect(t, ctx, q.Events, "0")
	delayed, err := q.Enqueue(ctx, job{N: 2}, task.Delay(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if err := q.RunNow(ctx, delayed); err != nil {
		t.Fatal(err)
	}
	if err := q.Reschedule(ctx, delayed, time.Now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	waitTransitions(t, read, delayed,
		transition{task.Scheduled, "", 0},
		transition{task.Pending, task.Scheduled, 0},
		transition{task.Scheduled, task.Pending, 0})

	e.run(a)
	snoozed, err := q.Enqueue(ctx, job{N: 1})
	if err != nil {
		t.Fatal(err)
	}
	waitTransitions(t, read, snoozed,
		transition{task.Pending, "", 0},
		transition{task.Active, task.Pending, 1},
		transition{task.Scheduled, task.Active, 0},
		transition{task.Pending, task.Scheduled, 0},
		transition{task.Active, task.Pending, 1},
		transition{task.Succeeded, task.Active, 1})
}

// TestQueueEventsReclaim: the tasks of a worker that died are reclaimed,
// active -> pending, and run again; one on its last attempt is dead, with
// the reclaimer's error.
func TestQueueEventsReclaim(t *testing.T) {
	e := newEnv(t)
	ctx := ctxT(t)
	const vis = 500 * time.Millisecond
	producer := e.app("producer")
	q, err := task.Declare[job, out](producer, "ghostev", task.Visibility(vis))
	if err != nil {
		t.Fatal(err)
	}
	if err := q.SetEvents(ctx, 0); err != nil {
		t.Fatal(err)
	}
	read := collect(t, ctx, q.Events, "0")
	last, err := q.Enqueue(ctx, job{N: 1}, task.WithMaxRetries(0))
	if err != nil {
		t.Fatal(err)
	}
	again, err := q.Enqueue(ctx, job{N: 2})
	if err != nil {
		t.Fatal(err)
	}
	if got := ghostFetch(t, e, "ghostev", 2); len(got) != 2 {
		t.Fatalf("the ghost took %d tasks, want 2", len(got))
	}
	w := e.app("w1")
	if _, err := task.Handle(w, "ghostev", func(ctx context.Context, tk *task.Task[job]) (out, error) {
		return out{Double: 2 * tk.Payload.N}, nil
	}, task.Visibility(vis)); err != nil {
		t.Fatal(err)
	}
	e.run(w)
	evs := waitTransitions(t, read, last,
		transition{task.Pending, "", 0},
		transition{task.Active, task.Pending, 1},
		transition{task.Dead, task.Active, 1})
	for _, ev := range evs {
		if ev.Task == last && ev.State == task.Dead && ev.Error != "worker lost while running the last attempt" {
			t.Errorf("dead event's error %q", ev.Error)
		}
	}
	waitTransitions(t, read, again,
		transition{task.Pending, "", 0},
		transition{task.Active, task.Pending, 1},
		transition{task.Pending, task.Active, 1},
		transition{task.Active, task.Pending, 2},
		transition{task.Succeeded, task.Active, 2})
}
