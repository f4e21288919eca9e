package task_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/leatdev/leat/internal/tools/redistest"
	"github.com/leatdev/leat/task"
)

// TestCancelEveryState: pending, scheduled and retrying tasks are dropped
// at once; an active one has its context cancelled and ends cancelled; a
// finished one is left alone.
func TestCancelEveryState(t *testing.T) {
	e := newEnv(t)
	ctx := ctxT(t)
	started := make(chan string, 10)
	handler := func(ctx context.Context, tk *task.Task[job]) (out, error) {
		switch tk.Payload.N {
		case 1: // runs until cancelled
			started <- tk.ID
			<-ctx.Done()
			if !errors.Is(context.Cause(ctx), task.ErrCancelled) {
				return out{}, errors.New("wrong cause")
			}
			return out{}, ctx.Err()
		case 2: // fails once, retried an hour later
			return out{}, task.RetryAfter(time.Hour, errors.New("later"))
		}
		return out{Double: 2 * tk.Payload.N}, nil
	}
	// Pending: no worker runs yet.
	producer, err := task.Declare[job, out](e.app("producer"), "c")
	if err != nil {
		t.Fatal(err)
	}
	pending, _ := producer.Enqueue(ctx, job{N: 0})
	scheduled, _ := producer.Enqueue(ctx, job{N: 0}, task.Delay(time.Hour))
	for id, want := range map[string]task.State{pending: task.Pending, scheduled: task.Scheduled} {
		if st, err := producer.Cancel(ctx, id); err != nil || st != want {
			t.Fatal(st, err)
		}
		if in, _ := producer.Info(ctx, id); in.State != task.Cancelled {
			t.Fatalf("%+v", in)
		}
	}
	a := e.app("w1")
	q, err := task.Handle(a, "c", handler)
	if err != nil {
		t.Fatal(err)
	}
	e.run(a)
	// Retrying.
	retrying, _ := q.Enqueue(ctx, job{N: 2})
	redistest.Eventually(t, 10*time.Second, "retrying", func() bool {
		in, _ := q.Info(ctx, retrying)
		return in.State == task.Retrying
	})
	if st, err := q.Cancel(ctx, retrying); err != nil || st != task.Retrying {
		t.Fatal(st, err)
	}
	// Active.
	active, _ := q.Enqueue(ctx, job{N: 1})
	<-started
	if st, err := q.Cancel(ctx, active); err != nil || st != task.Active {
		t.Fatal(st, err)
	}
	if _, err := q.Result(ctx, active); !errors.Is(err, task.ErrCancelled) {
		t.Fatal(err)
	}
	// Finished.
	done, _ := q.Enqueue(ctx, job{N: 3})
	if _, err := q.Result(ctx, done); err != nil {
		t.Fatal(err)
	}
	if st, err := q.Cancel(ctx, done); !errors.Is(err, task.ErrFinished) || st != task.Succeeded {
		t.Fatal(st, err)
	}
	if _, err := q.Cancel(ctx, "missing"); !errors.Is(err, task.ErrNotFound) {
		t.Fatal(err)
	}
	checkCounts(t, e, "c", map[task.State]int64{task.Cancelled: 4, task.Succeeded: 1})
}
