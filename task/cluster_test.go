package task_test

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/leatdev/leat/app"
	"github.com/leatdev/leat/inspect"
	"github.com/leatdev/leat/internal/tools/redistest"
	"github.com/leatdev/leat/task"
	"github.com/redis/go-redis/v9"
)

// TestCluster: on Redis Cluster every key of a queue shares its slot, so
// its scripts run; queues spread over the masters. Delayed, keyed and
// weighted queues run there.
func TestCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("cluster test")
	}
	t.Parallel()
	cl := redistest.StartCluster(t, 3)
	ctx := ctxT(t)
	a, err := app.New(app.Config{Name: "shop", Client: cl.Client(t), Logger: testLogger(), LeaderLease: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	double := func(ctx context.Context, tk *task.Task[job]) (out, error) { return out{Double: 2 * tk.Payload.N}, nil }
	var queues []*task.Queue[job, out]
	for i := range 4 {
		var opts []task.Option
		switch i {
		case 1:
			opts = append(opts, task.Keyed())
		case 2:
			opts = append(opts, task.Weighted(task.Level{Name: "a", Weight: 2}, task.Level{Name: "b", Weight: 1}))
		case 3:
			opts = append(opts, task.Events(0))
		}
		q, err := task.Handle(a, fmt.Sprintf("q%d", i), double, opts...)
		if err != nil {
			t.Fatal(err)
		}
		queues = append(queues, q)
	}
	done := make(chan error, 1)
	wctx, stop := context.WithCancel(ctx)
	go func() { done <- a.Run(wctx) }()
	defer func() { stop(); <-done }()
	for i, q := range queues {
		var opts []task.EnqueueOption
		if i == 1 {
			opts = append(opts, task.Key("k"))
		}
		ids, err := q.EnqueueMany(ctx, []job{{N: 1}, {N: 2}, {N: 3}}, opts...)
		if err != nil {
			t.Fatal(err)
		}
		later, err := q.Enqueue(ctx, job{N: 4}, append(opts, task.Delay(100*time.Millisecond))...)
		if err != nil {
			t.Fatal(err)
		}
		for j, id := range append(ids, later) {
			if r, err := q.Result(ctx, id); err != nil || r.Double != 2*(j+1) {
				t.Fatalf("queue %d task %d: %v %v", i, j, r, err)
			}
		}
	}
	// Queue q3's events, written by its scripts in its slot: its workers
	// turned them on before taking a task, so each task's end is one.
	evs, err := queues[3].EventsAfter(ctx, "0", 100)
	if err != nil {
		t.Fatal(err)
	}
	ended := 0
	for _, ev := range evs {
		if ev.State == task.Succeeded {
			ended++
		}
	}
	if ended != 4 {
		t.Errorf("queue q3: %d succeeded events, want 4: %+v", ended, evs)
	}
	// The inspector reads every queue (each in its own slot) in one go.
	reports, err := inspect.New(cl.Client(t), "", "shop").Queues(ctx)
	if err != nil || len(reports) != 4 {
		t.Fatalf("inspect queues: %d, %v", len(reports), err)
	}
	for _, r := range reports {
		if r.Counts["succeeded"] != 4 || r.Throughput.LastMinute.Finished != 4 || r.OldestReadyAgeMS != nil {
			t.Errorf("queue %s: %+v", r.Name, r)
		}
	}
}

// TestEnqueueReplyLost: on Redis Cluster, an enqueue whose script ran but
// whose reply was lost (the connection broke, as when a master dies) is run
// again and returns the IDs of the tasks it created, once each: no error,
// no duplicate, no second task. Unique and ID keep refusing a second
// enqueue. The queue's registration before its first enqueue is made again
// too.
func TestEnqueueReplyLost(t *testing.T) {
	if testing.Short() {
		t.Skip("cluster test")
	}
	t.Parallel()
	cl := redistest.StartCluster(t, 3)
	ctx := ctxT(t)
	c := cl.Client(t)
	lose := &loseReply{}
	c.AddHook(lose)
	a, err := app.New(app.Config{Name: "shop", Client: c, Logger: testLogger()})
	if err != nil {
		t.Fatal(err)
	}
	q, err := task.Handle(a, "q", func(ctx context.Context, tk *task.Task[job]) (out, error) { return out{}, nil })
	if err != nil {
		t.Fatal(err)
	}
	want := 0
	check := func(what string, ids []string, err error, n int) {
		t.Helper()
		if err != nil || len(ids) != n || slices.Contains(ids, "") {
			t.Fatalf("%s: %d IDs, %v", what, len(ids), err)
		}
		if got := lose.lost.Swap(0); got != 1 {
			t.Fatalf("%s: %d replies lost, want 1", what, got)
		}
		want += n
	}

	lose.next.Store(1) // the queue's registration (HSET), before its first enqueue
	id, err := q.Enqueue(ctx, job{N: 0})
	check("registration", []string{id}, err, 1)

	lose.next.Store(1)
	id, err = q.Enqueue(ctx, job{N: 1})
	check("generated ID", []string{id}, err, 1)

	lose.next.Store(1)
	id, err = q.Enqueue(ctx, job{N: 2}, task.ID("chosen"))
	check("ID of the caller's choice", []string{id}, err, 1)
	if id != "chosen" {
		t.Fatalf("ID %q", id)
	}
	if again, err := q.Enqueue(ctx, job{N: 2}, task.ID("chosen")); !errors.Is(err, task.ErrDuplicate) || again != "chosen" {
		t.Fatalf("the same ID again: %q, %v", again, err)
	}

	lose.next.Store(1)
	uid, err := q.Enqueue(ctx, job{N: 3}, task.Unique(time.Hour))
	check("unique", []string{uid}, err, 1)
	if again, err := q.Enqueue(ctx, job{N: 3}, task.Unique(time.Hour)); !errors.Is(err, task.ErrDuplicate) || again != uid {
		t.Fatalf("the same unique task again: %q, %v (first %q)", again, err, uid)
	}

	lose.next.Store(1) // the first of three script calls on a pipeline
	ps := make([]job, 600)
	for i := range ps {
		ps[i] = job{N: 10 + i}
	}
	ids, err := q.EnqueueMany(ctx, ps)
	check("many", ids, err, len(ps))

	reports, err := inspect.New(c, "", "shop").Queues(ctx)
	if err != nil || len(reports) != 1 {
		t.Fatalf("inspect: %v %v", reports, err)
	}
	if got := reports[0].Counts["pending"]; got != int64(want) {
		t.Fatalf("%d tasks pending, want %d", got, want)
	}
}

// loseReply is a client hook that lets the next script calls or HSETs
// (next of them) run and then fails them as if the connection had broken
// before their reply came; lost counts them.
type loseReply struct {
	next, lost atomic.Int32
}

func (h *loseReply) take(cmd redis.Cmder) bool {
	if n := cmd.Name(); cmd.Err() != nil || n != "evalsha" && n != "eval" && n != "hset" || h.next.Add(-1) < 0 {
		return false
	}
	h.lost.Add(1)
	cmd.SetErr(io.ErrUnexpectedEOF)
	return true
}

func (h *loseReply) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *loseReply) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if err := next(ctx, cmd); err != nil || !h.take(cmd) {
			return err
		}
		return cmd.Err()
	}
}

func (h *loseReply) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		err := next(ctx, cmds)
		for _, cmd := range cmds {
			if h.take(cmd) {
				return cmp.Or(err, cmd.Err())
			}
		}
		return err
	}
}
