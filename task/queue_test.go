package task_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/leatdev/leat/task"
)

type job struct {
	N int `json:"n"`
}

type out struct {
	Double int `json:"double"`
}

// TestEnqueueRunResult: tasks enqueued one by one and in bulk run once each
// across two workers, their results are stored, and the counts per state
// follow.
func TestEnqueueRunResult(t *testing.T) {
	e := newEnv(t)
	ctx := ctxT(t)
	var mu sync.Mutex
	runs := map[int]int{}
	handler := func(ctx context.Context, tk *task.Task[job]) (out, error) {
		mu.Lock()
		runs[tk.Payload.N]++
		mu.Unlock()
		return out{Double: 2 * tk.Payload.N}, nil
	}
	var q *task.Queue[job, out]
	for _, id := range []string{"w1", "w2"} {
		a := e.app(id)
		var err error
		q, err = task.Handle(a, "double", handler, task.Concurrency(5))
		if err != nil {
			t.Fatal(err)
		}
		e.run(a)
	}
	id, err := q.Enqueue(ctx, job{N: 0})
	if err != nil {
		t.Fatal(err)
	}
	const n = 2000
	ps := make([]job, n-1)
	for i := range ps {
		ps[i] = job{N: i + 1}
	}
	ids, err := q.EnqueueMany(ctx, ps)
	if err != nil || len(ids) != n-1 {
		t.Fatal(len(ids), err)
	}
	r, err := q.Result(ctx, id)
	if err != nil || r.Double != 0 {
		t.Fatal(r, err)
	}
	r, err = q.Result(ctx, ids[41])
	if err != nil || r.Double != 84 {
		t.Fatal(r, err)
	}
	eventually(t, 30*time.Second, "all tasks succeeded", func() bool {
		c, err := q.Counts(ctx)
		return err == nil && c[task.Succeeded] == n
	})
	mu.Lock()
	defer mu.Unlock()
	for i := 0; i < n; i++ {
		if runs[i] != 1 {
			t.Fatalf("task %d ran %d times", i, runs[i])
		}
	}
	in, err := q.Info(ctx, ids[0])
	if err != nil {
		t.Fatal(err)
	}
	if in.State != task.Succeeded || in.Attempts != 1 || in.Worker == "" || in.StartedAt.IsZero() ||
		in.FinishedAt.Before(in.StartedAt) || string(in.Result) != `{"double":2}` {
		t.Fatalf("info %+v", in)
	}
	c, _ := q.Counts(ctx)
	for _, s := range task.States {
		if s != task.Succeeded && c[s] != 0 {
			t.Fatalf("counts %v", c)
		}
	}
	if _, err := q.Info(ctx, "nope"); !errors.Is(err, task.ErrNotFound) {
		t.Fatal(err)
	}
}
