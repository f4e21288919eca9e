package task_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/leatdev/leat/internal/tools/redistest"
	"github.com/leatdev/leat/task"
)

// A handler that snoozes puts its task back, scheduled after the delay, its
// attempt not counted: a task with no retries snoozes twice and then
// succeeds on its first attempt; it is scheduled while it waits, and the
// task hooks report the snoozes. Snoozing is not failing: the task's error
// is what its last failure left (none here).
func TestSnooze(t *testing.T) {
	e := newEnv(t)
	ctx := ctxT(t)
	rec := &runRecorder{}
	a := e.appHooked("w1", rec)
	var mu sync.Mutex
	var runs []string // "attempt at ms since enqueue"
	var start time.Time
	q, err := task.Handle(a, "poll", func(ctx context.Context, tk *task.Task[int]) (int, error) {
		mu.Lock()
		runs = append(runs, fmt.Sprintf("attempt %d", tk.Attempt))
		n := len(runs)
		mu.Unlock()
		if n <= 2 {
			return 0, task.Snooze(300 * time.Millisecond)
		}
		return n, nil
	}, task.MaxRetries(0))
	if err != nil {
		t.Fatal(err)
	}
	e.run(a)
	start = time.Now()
	id, err := q.Enqueue(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	redistest.Eventually(t, 10*time.Second, "the task snoozed once", func() bool {
		in, err := q.Info(ctx, id)
		return err == nil && in.State == task.Scheduled
	})
	in, err := q.Info(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if in.Attempts != 0 || in.Error != "" || in.DueAt.Sub(in.StartedAt) < 250*time.Millisecond {
		t.Fatalf("snoozed: %d attempts, error %q, due %s after its start; want 0 attempts counted, no error, due about 300ms after", in.Attempts, in.Error, in.DueAt.Sub(in.StartedAt))
	}
	in, err = q.Wait(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	took := time.Since(start)
	if in.State != task.Succeeded || in.Attempts != 1 || string(in.Result) != "3" {
		t.Fatalf("task %s after %d attempts, result %s; want succeeded on attempt 1 after two snoozes", in.State, in.Attempts, in.Result)
	}
	if took < 600*time.Millisecond {
		t.Fatalf("two snoozes of 300ms took %s in all", took)
	}
	mu.Lock()
	if strings.Join(runs, ",") != "attempt 1,attempt 1,attempt 1" {
		t.Fatalf("runs %v: every run of a snoozing task is its first attempt", runs)
	}
	mu.Unlock()
	redistest.Eventually(t, 5*time.Second, "the runs reported", func() bool {
		c := rec.count()
		return c["poll snoozed 1"] == 2 && c["poll succeeded 1"] == 1
	})
	checkCounts(t, e, "poll", map[task.State]int64{task.Succeeded: 1})
}

// In a keyed queue a snoozed task keeps its place at the head of its key:
// the key's next task waits for it, other keys go on, and its key moves
// on once it ends, whether it succeeds after its snooze or is cancelled
// while snoozed.
func TestSnoozeKeyed(t *testing.T) {
	e := newEnv(t)
	ctx := ctxT(t)
	a := e.app("w1")
	var mu sync.Mutex
	var order []string
	snoozes := map[string]int{}
	q, err := task.Handle(a, "keyed", func(ctx context.Context, tk *task.Task[string]) (string, error) {
		mu.Lock()
		defer mu.Unlock()
		if strings.HasPrefix(tk.Payload, "snooze") && snoozes[tk.Payload] < 1 {
			snoozes[tk.Payload]++
			order = append(order, tk.Payload+" snoozed")
			d := 400 * time.Millisecond
			if tk.Payload == "snooze-long" {
				d = time.Hour // cancelled while snoozed
			}
			return "", task.Snooze(d)
		}
		order = append(order, tk.Payload)
		return tk.Payload, nil
	}, task.Keyed(), task.Concurrency(4))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ key, payload string }{
		{"a", "snooze-a1"}, {"a", "a2"}, {"a", "a3"},
		{"b", "b1"}, {"b", "b2"},
		{"c", "snooze-long"}, {"c", "c2"},
	} {
		if _, err := q.Enqueue(ctx, c.payload, task.Key(c.key)); err != nil {
			t.Fatal(err)
		}
	}
	e.run(a)
	redistest.Eventually(t, 10*time.Second, "key b done, key c's first task snoozed for an hour", func() bool {
		mu.Lock()
		defer mu.Unlock()
		s := strings.Join(order, ",")
		return strings.Contains(s, "b2") && strings.Contains(s, "snooze-long snoozed")
	})
	ids, err := q.List(ctx, task.ListScheduled, 10)
	if err != nil {
		t.Fatal(err)
	}
	var long string
	for _, in := range ids {
		if in.Key == "c" {
			long = in.ID
		}
	}
	if long == "" {
		t.Fatalf("scheduled tasks %+v: want key c's snoozed task", ids)
	}
	mu.Lock()
	if strings.Contains(strings.Join(order, ","), "c2") {
		t.Fatalf("runs %v: c2 ran while the key's first task was snoozed", order)
	}
	mu.Unlock()
	if _, err := q.Cancel(ctx, long); err != nil {
		t.Fatal(err)
	}
	redistest.Eventually(t, 10*time.Second, "every task ended", func() bool {
		c, err := q.Counts(ctx)
		return err == nil && c[task.Succeeded] == 6 && c[task.Cancelled] == 1
	})
	mu.Lock()
	defer mu.Unlock()
	pos := map[string]int{}
	for i, s := range order {
		pos[s] = i
	}
	if !(pos["snooze-a1 snoozed"] < pos["snooze-a1"] && pos["snooze-a1"] < pos["a2"] && pos["a2"] < pos["a3"] && pos["b1"] < pos["b2"]) {
		t.Fatalf("runs %v: want key a's tasks in order, its first after its snooze", order)
	}
	if pos["b2"] > pos["snooze-a1"] {
		t.Fatalf("runs %v: key b waited for key a's snoozed task", order)
	}
	if len(order) != 8 {
		t.Fatalf("runs %v: want each task once, and two snoozes", order)
	}
	checkCounts(t, e, "keyed", map[task.State]int64{task.Succeeded: 6, task.Cancelled: 1})
}
