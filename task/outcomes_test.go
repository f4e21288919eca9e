package task_test

import (
	"context"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/leatdev/leat/internal/tools/redistest"
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
						return &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}
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
	redistest.Eventually(t, 30*time.Second, "every task succeeded", func() bool {
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

// At Redis's maxmemory (noeviction) a worker can neither take tasks nor
// record outcomes (both write): it waits, and once memory is available
// again every task succeeds, each run once.
func TestTasksAtMaxmemory(t *testing.T) {
	t.Parallel()
	// a server of its own, whose memory limit the test sets
	e := &env{t: t, client: redistest.Start(t).Client(t), prefix: "full"}
	ctx := ctxT(t)
	a := e.app("w1")
	var mu sync.Mutex
	runs := map[string]int{}
	gate := make(chan struct{})
	q, err := task.Handle(a, "full", func(ctx context.Context, tk *task.Task[job]) (out, error) {
		<-gate
		mu.Lock()
		runs[tk.ID]++
		mu.Unlock()
		return out{}, nil
	}, task.Concurrency(4), task.Visibility(20*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	ps := make([]job, 40)
	ids, err := q.EnqueueMany(ctx, ps)
	if err != nil {
		t.Fatal(err)
	}
	e.run(a)
	redistest.Eventually(t, 10*time.Second, "four tasks running", func() bool {
		c, _ := q.Counts(ctx)
		return c[task.Active] == 4
	})
	oom := func() int64 { // OOM refusals so far
		for _, l := range strings.Split(e.client.Info(ctx, "errorstats").Val(), "\r\n") {
			if v, ok := strings.CutPrefix(l, "errorstat_OOM:count="); ok {
				n, _ := strconv.ParseInt(v, 10, 64)
				return n
			}
		}
		return 0
	}
	if err := e.client.ConfigSet(ctx, "maxmemory-policy", "noeviction").Err(); err != nil {
		t.Fatal(err)
	}
	if err := e.client.ConfigSet(ctx, "maxmemory", "1").Err(); err != nil {
		t.Fatal(err)
	}
	if _, err := q.Enqueue(ctx, job{N: 1}); err == nil || !strings.Contains(err.Error(), "OOM") {
		t.Fatalf("an enqueue at maxmemory: %v, want Redis's OOM error", err)
	}
	before := oom()
	close(gate) // the four running tasks end; their outcomes and the next fetches are refused
	redistest.Eventually(t, 10*time.Second, "outcomes and fetches refused", func() bool { return oom() >= before+4 })
	if c, _ := q.Counts(ctx); c[task.Succeeded] != 0 {
		t.Fatalf("counts %v: an outcome was recorded at maxmemory", c)
	}
	if err := e.client.ConfigSet(ctx, "maxmemory", "0").Err(); err != nil {
		t.Fatal(err)
	}
	redistest.Eventually(t, 30*time.Second, "every task succeeded", func() bool {
		c, _ := q.Counts(ctx)
		return c[task.Succeeded] == int64(len(ids))
	})
	mu.Lock()
	defer mu.Unlock()
	for _, id := range ids {
		if runs[id] != 1 {
			t.Fatalf("task %s ran %d times", id, runs[id])
		}
	}
}
