package task_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/leatdev/leat/task"
)

// TestHandBack: a handler's error matching ErrHandBack puts its task back
// in the queue without counting the attempt; the next run is attempt 1
// again, with no error recorded, even with no retries allowed.
func TestHandBack(t *testing.T) {
	e := newEnv(t)
	ctx := ctxT(t)
	a := e.app("w1")
	var runs atomic.Int32
	q, err := task.Handle(a, "back", func(ctx context.Context, tk *task.Task[int]) (int, error) {
		if runs.Add(1) <= 2 {
			return 0, fmt.Errorf("no GPU free here: %w", task.ErrHandBack)
		}
		return tk.Attempt, nil
	}, task.MaxRetries(0))
	if err != nil {
		t.Fatal(err)
	}
	e.run(a)
	id, err := q.Enqueue(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	in, err := q.Wait(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if in.State != task.Succeeded || in.Attempts != 1 || in.Error != "" || string(in.Result) != "1" || runs.Load() != 3 {
		t.Fatalf("after two hand-backs: %s, %d attempts, error %q, result %s, %d runs; want succeeded at attempt 1 after 3 runs", in.State, in.Attempts, in.Error, in.Result, runs.Load())
	}
}
