package task_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/leatdev/leat/internal/rdb"
	"github.com/leatdev/leat/task"
)

// TestNoKeysLeft: after a run and the retention period, the only keys of
// the queue left are its ready stream, counters and the bounded dead set
// with its tasks, and, while a worker runs, its workers set (gone when the
// worker stops); results are kept for exactly the retention.
func TestNoKeysLeft(t *testing.T) {
	e := newEnv(t)
	ctx := ctxT(t)
	a := e.app("w1")
	// Long enough for all 200 tasks to end within it on a loaded machine:
	// the first check wants every result still there.
	const retention = 3 * time.Second
	q, err := task.Handle(a, "mem", func(ctx context.Context, tk *task.Task[job]) (out, error) {
		if tk.Payload.N%10 == 0 {
			return out{}, errors.New("dies")
		}
		if tk.Payload.N%10 == 1 {
			return out{}, task.SkipRetry(nil)
		}
		return out{Double: 2 * tk.Payload.N}, nil
	}, task.Retention(retention), task.MaxRetries(1), task.Backoff(time.Millisecond, time.Millisecond),
		task.KeepDead(5, time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	stop := e.run(a)
	ps := make([]job, 200)
	for i := range ps {
		ps[i] = job{N: i}
	}
	ids, err := q.EnqueueMany(ctx, ps, task.Unique(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := q.Enqueue(ctx, job{N: 7}, task.Delay(10*time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	if _, err := q.Result(ctx, ids[2]); err != nil {
		t.Fatal(err)
	}
	// results are there during the retention...
	checkCounts(t, e, "mem", map[task.State]int64{task.Succeeded: 161, task.Failed: 20, task.Dead: 5})
	// ...and gone after it, with the counts following.
	checkCounts(t, e, "mem", map[task.State]int64{task.Dead: 5})
	if _, err := q.Info(ctx, ids[2]); !errors.Is(err, task.ErrNotFound) {
		t.Fatal(err)
	}
	ks := rdb.NewKeySpace(e.prefix, "shop")
	allowed := []string{ks.TaskStream("mem", 0), ks.TaskCounts("mem"), ks.TaskDead("mem"), ks.TaskWorkers("mem")}
	// Keys that expire by themselves: the finished-task counters of the
	// throughput, and what a fetch call of the worker took (kept a minute
	// for the call to be sent again; the slot's next call that takes nothing
	// deletes it, but a slot may have no next call).
	expiring := func(k string) bool {
		for prefix, keep := range map[string]time.Duration{ks.TaskFinishedPrefix("mem"): 330 * time.Second, ks.TaskFetchedPrefix("mem"): time.Minute} {
			if strings.HasPrefix(k, prefix) {
				ttl := e.client.PTTL(ctx, k).Val()
				return ttl > 0 && ttl <= keep
			}
		}
		return false
	}
	var left []string
	iter := e.client.Scan(ctx, 0, ks.TaskPattern("mem"), 1000).Iterator()
	for iter.Next(ctx) {
		k := iter.Val()
		if slices.Contains(allowed, k) || strings.HasPrefix(k, ks.TaskPrefix("mem")) {
			continue
		}
		if expiring(k) {
			continue
		}
		left = append(left, k)
	}
	if len(left) > 0 {
		t.Fatalf("keys left: %v", left)
	}
	if n, _ := e.client.XLen(ctx, ks.TaskStream("mem", 0)).Result(); n != 0 {
		t.Fatalf("%d entries left in the ready stream", n)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if n := e.client.Exists(ctx, ks.TaskWorkers("mem")).Val(); n != 0 {
		t.Fatal("the workers set outlived the last worker")
	}
	if ttl := e.client.PTTL(ctx, ks.TaskPrefix("mem")+scanOneDead(t, e)).Val(); ttl <= 0 || ttl > time.Hour {
		t.Fatalf("a dead task's TTL is %s", ttl)
	}
}

func scanOneDead(t *testing.T, e *env) string {
	ids, err := e.client.ZRange(context.Background(), rdb.NewKeySpace(e.prefix, "shop").TaskDead("mem"), 0, 0).Result()
	if err != nil || len(ids) != 1 {
		t.Fatal(ids, err)
	}
	return ids[0]
}
