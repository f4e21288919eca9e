package task_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/leatdev/leat/task"
	"github.com/redis/go-redis/v9"
)

// failFinish fails the pipelines that record outcomes (finish.lua, with an
// outcome "ok") while armed, as an unreachable Redis would.
type failFinish struct {
	until  atomic.Int64 // unix nanoseconds
	failed atomic.Int64
}

func (h *failFinish) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h *failFinish) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return next
}
func (h *failFinish) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if time.Now().UnixNano() < h.until.Load() {
			for _, c := range cmds {
				if c.Name() != "evalsha" {
					continue
				}
				for _, a := range c.Args() {
					if a == "ok" {
						h.failed.Add(1)
						return errors.New("dial tcp: connection refused (injected)")
					}
				}
			}
		}
		return next(ctx, cmds)
	}
}

// Outcomes a worker cannot record for a while (here 4 seconds, longer than
// the few tries it used to make before it gave them up to the reclaimer)
// are recorded once Redis answers again, within the visibility timeout:
// every task succeeds, once.
func TestOutcomesWaitForRedis(t *testing.T) {
	e := newEnv(t)
	ctx := ctxT(t)
	h := &failFinish{}
	e.client.AddHook(h)
	a := e.app("w1")
	var mu sync.Mutex
	runs := map[string]int{}
	q, err := task.Handle(a, "rec", func(ctx context.Context, tk *task.Task[job]) (out, error) {
		mu.Lock()
		runs[tk.ID]++
		mu.Unlock()
		return out{Double: 2 * tk.Payload.N}, nil
	}, task.Visibility(20*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	ids, err := q.EnqueueMany(ctx, []job{{N: 1}, {N: 2}, {N: 3}})
	if err != nil {
		t.Fatal(err)
	}
	h.until.Store(time.Now().Add(4 * time.Second).UnixNano())
	e.run(a)
	eventually(t, 30*time.Second, "every task succeeded", func() bool {
		c, _ := q.Counts(ctx)
		return c[task.Succeeded] == 3
	})
	if h.failed.Load() < 6 {
		t.Fatalf("%d recordings failed, want the outage to outlast six tries", h.failed.Load())
	}
	for _, id := range ids {
		mu.Lock()
		n := runs[id]
		mu.Unlock()
		in, err := q.Info(ctx, id)
		if err != nil || in.State != task.Succeeded || n != 1 {
			t.Fatalf("task %s: %+v (%v), ran %d times", id, in, err, n)
		}
	}
}
