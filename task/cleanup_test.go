package task_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/leatdev/leat/internal/rdb"
	"github.com/leatdev/leat/internal/tools/redistest"
	"github.com/leatdev/leat/task"
)

// TestDrain: Drain deletes what waits (pending, delayed, retrying, the
// tasks of a keyed queue's keys) and leaves what runs; the counts stay
// exact, unique keys are free again, and the queues run what comes after.
func TestDrain(t *testing.T) {
	e := newEnv(t)
	ctx := ctxT(t)
	release := make(chan struct{})
	a := e.app("w1")
	q, err := task.Handle(a, "plain", func(ctx context.Context, tk *task.Task[int]) (int, error) {
		switch tk.Payload {
		case 1:
			return 0, errors.New("again later")
		case 2:
			select {
			case <-release:
			case <-ctx.Done():
			}
		}
		return tk.Payload, nil
	}, task.Concurrency(2), task.Backoff(time.Hour, time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	k, err := task.Handle(a, "keyed", func(ctx context.Context, tk *task.Task[int]) (int, error) { return tk.Payload, nil }, task.Keyed())
	if err != nil {
		t.Fatal(err)
	}
	e.run(a)
	retrying, _ := q.Enqueue(ctx, 1)
	running, _ := q.Enqueue(ctx, 2)
	redistest.Eventually(t, 20*time.Second, "one task retrying, one running", func() bool {
		c, err := q.Counts(ctx)
		return err == nil && c[task.Retrying] == 1 && c[task.Active] == 1
	})
	for _, qu := range []interface{ Pause(context.Context) error }{q, k} {
		if err := qu.Pause(ctx); err != nil {
			t.Fatal(err)
		}
	}
	var waiting []string
	for _, opts := range [][]task.EnqueueOption{nil, nil, {task.Delay(time.Hour)}, {task.UniqueKey("once", time.Hour)}} {
		id, err := q.Enqueue(ctx, 3, opts...)
		if err != nil {
			t.Fatal(err)
		}
		waiting = append(waiting, id)
	}
	for i, key := range []string{"k1", "k1", "k1", "k2", "k2"} {
		id, err := k.Enqueue(ctx, i, task.Key(key))
		if err != nil {
			t.Fatal(err)
		}
		waiting = append(waiting, id)
	}
	if n, err := q.Drain(ctx); err != nil || n != 5 {
		t.Fatalf("Drain = %d, %v; want the 4 waiting and the retrying task", n, err)
	}
	if n, err := k.Drain(ctx); err != nil || n != 5 {
		t.Fatalf("Drain of the keyed queue = %d, %v; want its 5 tasks", n, err)
	}
	for _, id := range append(waiting, retrying) {
		if _, err := q.Info(ctx, id); !errors.Is(err, task.ErrNotFound) {
			if _, err := k.Info(ctx, id); !errors.Is(err, task.ErrNotFound) {
				t.Fatalf("task %s after the drain: %v", id, err)
			}
		}
	}
	c, err := q.Counts(ctx)
	if err != nil || c[task.Pending]+c[task.Scheduled]+c[task.Retrying] != 0 || c[task.Active] != 1 {
		t.Fatalf("counts after the drain: %v %v; want the running task only", c, err)
	}
	if in, err := q.Info(ctx, running); err != nil || in.State != task.Active {
		t.Fatalf("the running task: %+v %v", in, err)
	}
	// What comes after runs: the unique key is free, the keys take tasks.
	again, err := q.Enqueue(ctx, 3, task.UniqueKey("once", time.Hour))
	if err != nil {
		t.Fatalf("the unique key after the drain: %v", err)
	}
	next, err := k.Enqueue(ctx, 9, task.Key("k1"))
	if err != nil {
		t.Fatal(err)
	}
	for _, qu := range []interface{ Resume(context.Context) error }{q, k} {
		if err := qu.Resume(ctx); err != nil {
			t.Fatal(err)
		}
	}
	close(release)
	for _, w := range []struct {
		q  *task.Queue[int, int]
		id string
	}{{q, running}, {q, again}, {k, next}} {
		if in, err := w.q.Wait(ctx, w.id); err != nil || in.State != task.Succeeded {
			t.Fatalf("task %s after the drain: %+v %v", w.id, in, err)
		}
	}
	if c, err := k.Counts(ctx); err != nil || c[task.Succeeded] != 1 || c[task.Pending] != 0 {
		t.Fatalf("keyed counts: %v %v", c, err)
	}
}

// TestCleanAndObliterate: Clean deletes the ended tasks of a state older
// than an age and no other; Obliterate refuses while a worker runs the
// queue, then leaves none of its keys.
func TestCleanAndObliterate(t *testing.T) {
	e := newEnv(t)
	ctx := ctxT(t)
	a := e.app("w1")
	q, err := task.Handle(a, "jobs", func(ctx context.Context, tk *task.Task[int]) (int, error) {
		if tk.Payload < 0 {
			return 0, task.SkipRetry(errors.New("negative"))
		}
		return tk.Payload, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	stop := e.run(a)
	var ids []string
	for _, p := range []int{1, 2, 3, -1} {
		id, err := q.Enqueue(ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	for _, id := range ids {
		if _, err := q.Wait(ctx, id); err != nil && !errors.Is(err, task.ErrFailed) {
			t.Fatal(err)
		}
	}
	c, _ := q.Counts(ctx)
	failedState := task.Failed
	if c[task.Dead] == 1 {
		failedState = task.Dead
	}
	if n, err := q.Clean(ctx, task.Succeeded, time.Hour); err != nil || n != 0 {
		t.Fatalf("Clean(succeeded, 1h) = %d, %v; want none that old", n, err)
	}
	if n, err := q.Clean(ctx, task.Succeeded, 0); err != nil || n != 3 {
		t.Fatalf("Clean(succeeded, 0) = %d, %v; want 3", n, err)
	}
	if _, err := q.Clean(ctx, task.Pending, 0); err == nil {
		t.Fatal("Clean of pending tasks accepted")
	}
	if c, err := q.Counts(ctx); err != nil || c[task.Succeeded] != 0 || c[failedState] != 1 {
		t.Fatalf("counts after cleaning: %v %v; want the %s task left", c, err, failedState)
	}
	if in, err := q.Info(ctx, ids[3]); err != nil || in.State != failedState {
		t.Fatalf("the %s task: %+v %v", failedState, in, err)
	}
	if _, err := q.Obliterate(ctx, false); !errors.Is(err, task.ErrQueueRunning) {
		t.Fatalf("Obliterate with a worker running: %v, want ErrQueueRunning", err)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if n, err := q.Obliterate(ctx, false); err != nil || n == 0 {
		t.Fatalf("Obliterate = %d, %v", n, err)
	}
	ks := rdb.NewKeySpace(e.prefix, "shop")
	if keys := e.client.Keys(ctx, ks.TaskPattern("jobs")).Val(); len(keys) != 0 {
		t.Fatalf("keys of the queue left: %v", keys)
	}
	if _, err := task.Lookup(ctx, e.app("cli"), "jobs"); !errors.Is(err, task.ErrUnknownQueue) {
		t.Fatalf("Lookup after Obliterate: %v, want ErrUnknownQueue", err)
	}
}
