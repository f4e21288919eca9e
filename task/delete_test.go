package task_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/leatdev/leat/internal/tools/redistest"
	"github.com/leatdev/leat/task"
)

// Delete removes an ended task at once, with its updates and log, and
// keeps the counts exact; a task that has not ended is left alone.
// DeleteDead removes every dead task.
func TestDelete(t *testing.T) {
	e := newEnv(t)
	ctx := ctxT(t)
	a := e.app("w1")
	q, err := task.Handle(a, "d", func(ctx context.Context, tk *task.Task[job]) (out, error) {
		tk.Log("working")
		_ = tk.Progress(map[string]int{"n": tk.Payload.N})
		switch tk.Payload.N {
		case 1:
			return out{}, task.SkipRetry(errors.New("no"))
		case 2:
			return out{}, errors.New("dies")
		case 3:
			<-ctx.Done()
			return out{}, ctx.Err()
		}
		return out{Double: 2 * tk.Payload.N}, nil
	}, task.MaxRetries(0), task.Grace(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	e.run(a)
	ids := map[task.State]string{}
	for n, st := range []task.State{task.Succeeded, task.Failed, task.Dead} {
		id, err := q.Enqueue(ctx, job{N: n})
		if err != nil {
			t.Fatal(err)
		}
		if in, _ := q.Wait(ctx, id); in == nil || in.State != st {
			t.Fatalf("task %d: %+v, want %s", n, in, st)
		}
		ids[st] = id
	}
	cancelled, _ := q.Enqueue(ctx, job{N: 0}, task.Delay(time.Hour))
	if _, err := q.Cancel(ctx, cancelled); err != nil {
		t.Fatal(err)
	}
	ids[task.Cancelled] = cancelled
	scheduled, _ := q.Enqueue(ctx, job{N: 0}, task.Delay(time.Hour))
	active, _ := q.Enqueue(ctx, job{N: 3})
	redistest.Eventually(t, 10*time.Second, "the blocking task active", func() bool {
		in, err := q.Info(ctx, active)
		return err == nil && in.State == task.Active
	})
	checkCounts(t, e, "d", map[task.State]int64{task.Succeeded: 1, task.Failed: 1, task.Dead: 1, task.Cancelled: 1, task.Scheduled: 1, task.Active: 1})

	for _, id := range []string{scheduled, active} {
		if _, err := q.Delete(ctx, id); !errors.Is(err, task.ErrFinished) {
			t.Fatalf("delete of a task not ended: %v, want ErrFinished", err)
		}
	}
	if _, err := q.Delete(ctx, "missing"); !errors.Is(err, task.ErrNotFound) {
		t.Fatalf("delete of a missing task: %v", err)
	}
	traces := func(id string) int64 {
		return e.client.Exists(ctx, e.prefix+":tupd:{shop:task:d}:"+id, e.prefix+":tlog:{shop:task:d}:"+id).Val()
	}
	for st, id := range ids {
		if n := traces(id); st != task.Cancelled && n != 2 {
			t.Fatalf("the %s task has %d of its updates and log before its delete, want both", st, n)
		}
		got, err := q.Delete(ctx, id)
		if err != nil || got != st {
			t.Fatalf("delete of the %s task: %s, %v", st, got, err)
		}
		if _, err := q.Info(ctx, id); !errors.Is(err, task.ErrNotFound) {
			t.Fatalf("the %s task after its delete: %v", st, err)
		}
		if st == task.Cancelled {
			continue // never ran: no updates, no log
		}
		if n := traces(id); n != 0 {
			t.Fatalf("the %s task's updates or log left after its delete (%d keys)", st, n)
		}
	}
	for _, k := range []string{e.prefix + ":tdead:{shop:task:d}", e.prefix + ":tdone:{shop:task:d}"} {
		if n := e.client.ZCard(ctx, k).Val(); n != 0 {
			t.Fatalf("%s holds %d members after the deletes", k, n)
		}
	}
	checkCounts(t, e, "d", map[task.State]int64{task.Scheduled: 1, task.Active: 1})

	var dead []string
	for range 3 {
		id, _ := q.Enqueue(ctx, job{N: 2})
		dead = append(dead, id)
	}
	for _, id := range dead {
		if in, _ := q.Wait(ctx, id); in == nil || in.State != task.Dead {
			t.Fatalf("task %s: %+v, want dead", id, in)
		}
	}
	if n, err := q.DeleteDead(ctx); err != nil || n != 3 {
		t.Fatalf("DeleteDead: %d, %v; want 3", n, err)
	}
	checkCounts(t, e, "d", map[task.State]int64{task.Scheduled: 1, task.Active: 1})
	if n, err := q.DeleteDead(ctx); err != nil || n != 0 {
		t.Fatalf("DeleteDead with none dead: %d, %v", n, err)
	}
}
