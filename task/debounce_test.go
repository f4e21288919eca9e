package task_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/leatdev/leat/internal/tools/redistest"
	"github.com/leatdev/leat/task"
)

// TestDebounceAndThrottle: a burst of Debounce enqueues of one key makes one
// task, run once with the last payload; Throttle refuses a key's tasks for
// its whole window, after its task ended too, and takes one again after.
func TestDebounceAndThrottle(t *testing.T) {
	e := newEnv(t)
	ctx := ctxT(t)
	a := e.app("w1")
	q, err := task.Handle(a, "settle", func(ctx context.Context, tk *task.Task[int]) (int, error) { return tk.Payload, nil })
	if err != nil {
		t.Fatal(err)
	}
	if _, err := q.Enqueue(ctx, 1, task.Debounce("k", time.Second), task.Delay(time.Second)); err == nil || !strings.Contains(err.Error(), "Debounce sets the delay") {
		t.Fatalf("Debounce with Delay: %v", err)
	}
	if _, err := q.Enqueue(ctx, 1, task.Debounce("", time.Second)); err == nil {
		t.Fatal("Debounce without a key accepted")
	}
	e.run(a)

	var first string
	for i := 1; i <= 5; i++ {
		id, err := q.Enqueue(ctx, i, task.Debounce("user-1", 500*time.Millisecond))
		if err != nil {
			t.Fatalf("debounce %d: %v", i, err)
		}
		if first == "" {
			first = id
		} else if id != first {
			t.Fatalf("debounce %d made task %s, want %s", i, id, first)
		}
	}
	in, err := q.Wait(ctx, first)
	if err != nil || in.State != task.Succeeded || string(in.Result) != "5" || in.Attempts != 1 {
		t.Fatalf("the debounced task: %+v %v, want one run with the last payload", in, err)
	}
	again, err := q.Enqueue(ctx, 6, task.Debounce("user-1", 50*time.Millisecond))
	if err != nil || again == first {
		t.Fatalf("a debounce after the task ran: %s, %v; want a new task", again, err)
	}
	if in, err := q.Wait(ctx, again); err != nil || string(in.Result) != "6" {
		t.Fatalf("the second debounced task: %+v %v", in, err)
	}
	if c, err := q.Counts(ctx); err != nil || c[task.Succeeded] != 2 || c[task.Scheduled] != 0 {
		t.Fatalf("counts: %v %v; want two tasks run", c, err)
	}

	window := 2 * time.Second
	thr, err := q.Enqueue(ctx, 7, task.Throttle("report", window))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := q.Wait(ctx, thr); err != nil {
		t.Fatal(err)
	}
	id, err := q.Enqueue(ctx, 8, task.Throttle("report", window))
	if !errors.Is(err, task.ErrDuplicate) || id != thr {
		t.Fatalf("a throttled enqueue after the first task ended: %s, %v; want ErrDuplicate and %s", id, err, thr)
	}
	var next string
	redistest.Eventually(t, 20*time.Second, "the throttle's window to end", func() bool {
		next, err = q.Enqueue(ctx, 9, task.Throttle("report", window))
		return err == nil
	})
	if next == thr {
		t.Fatalf("after the window: the same task %s", next)
	}
}
