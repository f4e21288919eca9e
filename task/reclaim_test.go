package task_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/leatdev/leat/internal/rdb"
	"github.com/leatdev/leat/internal/tools/redistest"
	"github.com/leatdev/leat/task"
)

// ghostFetch takes up to n ready tasks of queue as a worker that then dies
// (it never finishes them).
func ghostFetch(t *testing.T, e *env, queue string, n int) []rdb.Fetched {
	t.Helper()
	ks := rdb.NewKeySpace(e.prefix, "shop")
	k := rdb.Keys(ks, queue)
	if err := e.client.XGroupCreateMkStream(context.Background(), ks.TaskStream(queue, 0), rdb.TaskGroup, "0").Err(); err != nil && err.Error() != "BUSYGROUP Consumer Group name already exists" {
		t.Fatal(err)
	}
	got, err := rdb.FetchTasks(context.Background(), e.client, k, "ghost", rdb.Limits{}, rdb.NewCall(), []int{n}, n)
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// TestReclaimDeadWorker: tasks taken by a worker that died are reclaimed
// after the visibility timeout and run again, keyed tasks in order; a task
// on its last attempt is dead instead; a live worker's long task is not
// reclaimed.
func TestReclaimDeadWorker(t *testing.T) {
	e := newEnv(t)
	ctx := ctxT(t)
	const vis = 500 * time.Millisecond
	producer := e.app("producer")
	plain, _ := task.Declare[job, out](producer, "plain", task.Visibility(vis))
	keyedQ, _ := task.Declare[keyed, struct{}](producer, "keyq", task.Keyed(), task.Visibility(vis))

	p1, _ := plain.Enqueue(ctx, job{N: 1})
	last, _ := plain.Enqueue(ctx, job{N: 2}, task.WithMaxRetries(0))
	enqueueKeyed(t, keyedQ, "k", 0, 3)
	if got := ghostFetch(t, e, "plain", 10); len(got) != 2 {
		t.Fatalf("ghost took %d plain tasks", len(got))
	}
	if got := ghostFetch(t, e, "keyq", 10); len(got) != 1 || got[0].Key != "k" {
		t.Fatalf("ghost took %+v", got)
	}

	var runs sync.Map
	var longRuns atomic.Int32
	a := e.app("w1")
	q, err := task.Handle(a, "plain", func(ctx context.Context, tk *task.Task[job]) (out, error) {
		if tk.Payload.N == 3 {
			longRuns.Add(1)
			time.Sleep(3 * vis) // longer than the visibility timeout: touched, not reclaimed
		}
		n, _ := runs.LoadOrStore(tk.ID, new(atomic.Int32))
		n.(*atomic.Int32).Add(1)
		return out{Double: tk.Attempt}, nil
	}, task.Visibility(vis))
	if err != nil {
		t.Fatal(err)
	}
	log := newKeyLog()
	if _, err := task.Handle(a, "keyq", log.handler(0), task.Keyed(), task.Visibility(vis)); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	e.run(a)
	long, _ := q.Enqueue(ctx, job{N: 3})

	if r, err := q.Result(ctx, p1); err != nil || r.Double != 2 {
		t.Fatalf("reclaimed task: %v %v (want its second attempt)", r, err)
	}
	if took := time.Since(start); took < vis || took > vis+2*time.Second {
		t.Errorf("reclaimed after %s, visibility %s", took, vis)
	}
	in, err := q.Wait(ctx, last)
	if err != nil || in.State != task.Dead || in.Attempts != 1 {
		t.Fatalf("task on its last attempt: %+v %v", in, err)
	}
	redistest.Eventually(t, 10*time.Second, "the key's tasks ran", func() bool { return log.total() == 3 })
	log.mu.Lock()
	if s := log.seqs["k"]; s[0] != 0 || s[1] != 1 || s[2] != 2 || len(log.violations) > 0 {
		t.Errorf("key order %v, violations %v", s, log.violations)
	}
	log.mu.Unlock()
	if _, err := q.Result(ctx, long); err != nil {
		t.Fatal(err)
	}
	if n := longRuns.Load(); n != 1 {
		t.Fatalf("a long task of a live worker ran %d times", n)
	}
	checkCounts(t, e, "plain", map[task.State]int64{task.Succeeded: 2, task.Dead: 1})
	checkCounts(t, e, "keyq", map[task.State]int64{task.Succeeded: 3})
}
