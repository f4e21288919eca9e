package task_test

import (
	"context"
	"errors"
	"log/slog"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/leatdev/leat/app"
	"github.com/leatdev/leat/inspect"
	"github.com/leatdev/leat/internal/rdb"
	"github.com/leatdev/leat/internal/tools/redistest"
	"github.com/leatdev/leat/task"
)

// TestStatusTransitions: a task goes scheduled → active → retrying →
// active → succeeded, with attempts, worker and timestamps recorded.
func TestStatusTransitions(t *testing.T) {
	e := newEnv(t)
	ctx := ctxT(t)
	a := e.app("w1")
	step := make(chan struct{})
	q, err := task.Handle(a, "st", func(ctx context.Context, tk *task.Task[job]) (out, error) {
		<-step
		if tk.Attempt == 1 {
			return out{}, task.RetryAfter(300*time.Millisecond, errors.New("first"))
		}
		return out{Double: tk.Attempt}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	id, err := q.Enqueue(ctx, job{N: 1}, task.Delay(200*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	state := func(want task.State) *task.Info {
		t.Helper()
		var in *task.Info
		redistest.Eventually(t, 10*time.Second, string(want), func() bool {
			in, err = q.Info(ctx, id)
			return err == nil && in.State == want
		})
		return in
	}
	in := state(task.Scheduled)
	if !in.DueAt.After(in.EnqueuedAt) {
		t.Fatalf("%+v", in)
	}
	e.run(a)
	in = state(task.Active)
	if in.Attempts != 1 || in.Worker != "w1" || in.StartedAt.Before(in.DueAt) {
		t.Fatalf("%+v", in)
	}
	step <- struct{}{}
	in = state(task.Retrying)
	if in.Error != "retry after 300ms: first" {
		t.Fatalf("%+v", in)
	}
	in = state(task.Active)
	if in.Attempts != 2 {
		t.Fatalf("%+v", in)
	}
	step <- struct{}{}
	in = state(task.Succeeded)
	if string(in.Result) != `{"double":2}` || in.Error != "" || in.FinishedAt.IsZero() {
		t.Fatalf("%+v", in)
	}
}

// TestGracefulStopHandsBack: tasks a stopping worker could not finish
// within its grace period go back to the queue at once and another worker
// runs them, without waiting for the visibility timeout.
func TestGracefulStopHandsBack(t *testing.T) {
	e := newEnv(t)
	ctx := ctxT(t)
	var blocking atomic.Bool
	blocking.Store(true)
	started := make(chan struct{}, 10)
	handler := func(ctx context.Context, tk *task.Task[job]) (out, error) {
		if blocking.Load() {
			started <- struct{}{}
			<-ctx.Done()
			return out{}, ctx.Err()
		}
		return out{Double: tk.Attempt}, nil
	}
	opts := []task.Option{task.Concurrency(3), task.Grace(100 * time.Millisecond), task.Visibility(time.Minute)}
	a1 := e.app("w1")
	q, err := task.Handle(a1, "hb", handler, opts...)
	if err != nil {
		t.Fatal(err)
	}
	stop1 := e.run(a1)
	ids, err := q.EnqueueMany(ctx, []job{{N: 1}, {N: 2}, {N: 3}})
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		<-started
	}
	blocking.Store(false)
	if err := stop1(); err != nil {
		t.Fatal(err)
	}
	for _, id := range ids {
		in, _ := q.Info(ctx, id)
		if in.State != task.Pending || in.Attempts != 0 {
			t.Fatalf("after the stop: %+v", in)
		}
	}
	a2 := e.app("w2")
	if _, err := task.Handle(a2, "hb", handler, opts...); err != nil {
		t.Fatal(err)
	}
	e.run(a2)
	for _, id := range ids {
		if r, err := q.Result(ctx, id); err != nil || r.Double != 1 {
			t.Fatal(r, err)
		}
	}
}

// TestConcurrencyLive: SetConcurrency changes how many tasks running
// workers run at once, without a restart; ClearConcurrency brings them back
// to their program's Concurrency.
func TestConcurrencyLive(t *testing.T) {
	e := newEnv(t)
	ctx := ctxT(t)
	var mu sync.Mutex
	running, peak, peakAfter := 0, 0, 0
	cleared := false
	release := make(chan struct{})
	one := make(chan struct{}) // lets one running task end
	var logs redistest.Log     // says when the worker applied a concurrency
	a, err := app.New(app.Config{Name: "shop", Client: e.client, KeyPrefix: e.prefix, WorkerID: "w1",
		Logger: slog.New(slog.NewTextHandler(&logs, nil)), LeaderLease: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	q, err := task.Handle(a, "conc", func(ctx context.Context, tk *task.Task[job]) (out, error) {
		mu.Lock()
		running++
		peak = max(peak, running)
		if cleared {
			peakAfter = max(peakAfter, running)
		}
		mu.Unlock()
		select {
		case <-release:
		case <-one:
		case <-ctx.Done():
		}
		mu.Lock()
		running--
		mu.Unlock()
		return out{}, nil
	}, task.Concurrency(2))
	if err != nil {
		t.Fatal(err)
	}
	e.run(a)
	const tasks = 1000 // more than the ends below take until the clear applies (within a second)
	if _, err := q.EnqueueMany(ctx, make([]job, tasks)); err != nil {
		t.Fatal(err)
	}
	cur := func() int { mu.Lock(); defer mu.Unlock(); return running }
	redistest.Eventually(t, 5*time.Second, "2 running", func() bool { return cur() == 2 })
	if err := q.SetConcurrency(ctx, 5); err != nil {
		t.Fatal(err)
	}
	redistest.Eventually(t, 5*time.Second, "5 running", func() bool { return cur() == 5 })
	if err := q.ClearConcurrency(ctx); err != nil {
		t.Fatal(err)
	}
	// Back at 2 (a running count of 2 seen before would say nothing: at 5,
	// tasks that end are replaced a fetch later), the running ones end one
	// by one until 2 run.
	redistest.Eventually(t, 10*time.Second, "the worker back at 2", func() bool {
		return strings.Contains(logs.String(), `msg="task concurrency changed" app=shop`) &&
			strings.Contains(logs.String(), "from=5 to=2")
	})
	redistest.Eventually(t, 10*time.Second, "back to 2 running", func() bool {
		if cur() == 2 {
			return true
		}
		select {
		case one <- struct{}{}:
		default:
		}
		return false
	})
	mu.Lock()
	cleared = true
	mu.Unlock()
	for range 4 {
		select {
		case one <- struct{}{}:
		case <-time.After(10 * time.Second):
			c, _ := q.Counts(ctx)
			t.Fatalf("no task running to end: %d running, counts %v", cur(), c)
		}
	}
	close(release)
	redistest.Eventually(t, 10*time.Second, "all done", func() bool {
		c, _ := q.Counts(ctx)
		return c[task.Succeeded] == tasks
	})
	mu.Lock()
	defer mu.Unlock()
	if peak != 5 || peakAfter > 2 {
		t.Fatalf("peak %d, want 5; after the clear %d, want at most 2", peak, peakAfter)
	}
}

// TestStuckHandler: a handler that ignores its cancelled context does not
// keep a stopping worker forever; its task is reclaimed later.
func TestStuckHandler(t *testing.T) {
	e := newEnv(t)
	ctx := ctxT(t)
	release := make(chan struct{})
	var runs atomic.Int32
	a1 := e.app("w1")
	opts := []task.Option{task.Grace(50 * time.Millisecond), task.Visibility(500 * time.Millisecond)}
	q, err := task.Handle(a1, "stuck", func(ctx context.Context, tk *task.Task[job]) (out, error) {
		if runs.Add(1) == 1 {
			<-release // ignores ctx
		}
		return out{Double: tk.Attempt}, nil
	}, opts...)
	if err != nil {
		t.Fatal(err)
	}
	stop1 := e.run(a1)
	id, _ := q.Enqueue(ctx, job{})
	redistest.Eventually(t, 5*time.Second, "started", func() bool { return runs.Load() == 1 })
	start := time.Now()
	if err := stop1(); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("stop took %s", d)
	}
	a2 := e.app("w2")
	if _, err := task.Handle(a2, "stuck", func(ctx context.Context, tk *task.Task[job]) (out, error) {
		runs.Add(1)
		return out{Double: tk.Attempt}, nil
	}, opts...); err != nil {
		t.Fatal(err)
	}
	e.run(a2)
	if r, err := q.Result(ctx, id); err != nil || r.Double != 2 {
		t.Fatal(r, err)
	}
	close(release) // the stuck handler returns; its outcome is dropped
}

// A queue's concurrency follows the function the handler's program
// registers, re-evaluated while the worker runs.
func TestConcurrencyFunc(t *testing.T) {
	e := newEnv(t)
	ctx := ctxT(t)
	var mu sync.Mutex
	running, peak := 0, 0
	release := make(chan struct{})
	var want atomic.Int64
	want.Store(1)
	a := e.app("w1")
	q, err := task.Handle(a, "modified", func(ctx context.Context, tk *task.Task[job]) (out, error) {
		mu.Lock()
		running++
		peak = max(peak, running)
		mu.Unlock()
		select {
		case <-release:
		case <-ctx.Done():
		}
		mu.Lock()
		running--
		mu.Unlock()
		return out{}, nil
	}, task.Concurrency(8), task.ConcurrencyFunc(func(configured int) int {
		if configured != 8 {
			panic("configured concurrency not passed")
		}
		return int(want.Load())
	}))
	if err != nil {
		t.Fatal(err)
	}
	e.run(a)
	if _, err := q.EnqueueMany(ctx, make([]job, 10)); err != nil {
		t.Fatal(err)
	}
	cur := func() int { mu.Lock(); defer mu.Unlock(); return running }
	redistest.Eventually(t, 5*time.Second, "1 running", func() bool { return cur() == 1 })
	want.Store(3)
	redistest.Eventually(t, 5*time.Second, "3 running", func() bool { return cur() == 3 })
	close(release)
	redistest.Eventually(t, 10*time.Second, "all done", func() bool {
		c, _ := q.Counts(ctx)
		return c[task.Succeeded] == 10
	})
	mu.Lock()
	defer mu.Unlock()
	if peak != 3 {
		t.Fatalf("peak %d, want 3 (the function's value, not the configured 8)", peak)
	}
}

// TestConcurrencyBoundQuickTasks: with handlers that return at once, so
// that slots free while a fetch is under way and the worker's fetches
// overlap, no more tasks run at once than the concurrency, and every task
// succeeds once.
func TestConcurrencyBoundQuickTasks(t *testing.T) {
	e := newEnv(t)
	ctx := ctxT(t)
	var mu sync.Mutex
	running, peak := 0, 0
	runs := map[int]int{}
	a := e.app("w1")
	q, err := task.Handle(a, "quick", func(ctx context.Context, tk *task.Task[job]) (out, error) {
		mu.Lock()
		running++
		peak = max(peak, running)
		runs[tk.Payload.N]++
		mu.Unlock()
		runtime.Gosched() // others may start meanwhile, if they could
		mu.Lock()
		running--
		mu.Unlock()
		return out{}, nil
	}, task.Concurrency(3))
	if err != nil {
		t.Fatal(err)
	}
	const n = 3000
	ps := make([]job, n)
	for i := range ps {
		ps[i] = job{N: i}
	}
	if _, err := q.EnqueueMany(ctx, ps); err != nil {
		t.Fatal(err)
	}
	e.run(a)
	redistest.Eventually(t, 30*time.Second, "all done", func() bool {
		c, _ := q.Counts(ctx)
		return c[task.Succeeded] == n
	})
	mu.Lock()
	defer mu.Unlock()
	if peak > 3 {
		t.Fatalf("%d tasks ran at once at concurrency 3", peak)
	}
	for i := range n {
		if runs[i] != 1 {
			t.Fatalf("task %d ran %d times", i, runs[i])
		}
	}
}

// A worker whose every slot runs a long task reads nothing, yet Redis sees
// it at least every second: it claims its running tasks' entries again,
// which keeps the reclaimer off them. So inspect counts it alive
// (inspect.TaskWorkerAlive) however long its tasks run.
func TestBusyWorkerStaysSeen(t *testing.T) {
	e := newEnv(t)
	ctx := ctxT(t)
	a := e.app("w1")
	release := make(chan struct{})
	started := make(chan struct{}, 1)
	q, err := task.Handle(a, "busy", func(ctx context.Context, tk *task.Task[job]) (out, error) {
		started <- struct{}{}
		select {
		case <-release:
		case <-ctx.Done():
		}
		return out{}, nil
	}, task.Concurrency(1))
	if err != nil {
		t.Fatal(err)
	}
	defer close(release)
	e.run(a)
	if _, err := q.Enqueue(ctx, job{N: 1}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-started:
	case <-ctx.Done():
		t.Fatal("the task never started")
	}
	stream := rdb.NewKeySpace(e.prefix, "shop").TaskStream("busy", 0)
	in := inspect.New(e.client, e.prefix, "shop")
	// The subject is time passing: w1 stays seen for 3s while its task runs.
	for end := time.Now().Add(3 * time.Second); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
		cs, err := e.client.XInfoConsumers(ctx, stream, rdb.TaskGroup).Result()
		if err != nil || len(cs) != 1 || cs[0].Name != "w1" || cs[0].Pending != 1 {
			t.Fatalf("consumers %+v (%v): want w1 with its task", cs, err)
		}
		if cs[0].Idle > inspect.TaskWorkerAlive/2 {
			t.Fatalf("w1 unseen for %s while its task runs", cs[0].Idle)
		}
	}
	r, err := in.Queue(ctx, "busy")
	if err != nil || len(r.Workers) != 1 || !r.Workers[0].Alive || r.Workers[0].Running != 1 {
		t.Fatalf("inspect: %+v %v: want w1 alive, running 1", r, err)
	}
}

// An idle worker stays alive to the inspector (and the workers metric) for
// as long as it runs, past inspect.TaskWorkerAlive, though Redis marks a
// consumer as seen only when a read gives it entries or a claim takes
// some: it beats in the queue's workers set. One that never ran a task is
// listed too, and one that stops is gone at once.
func TestIdleWorkerStaysAlive(t *testing.T) {
	e := newEnv(t)
	ctx := ctxT(t)
	handler := func(ctx context.Context, tk *task.Task[job]) (out, error) { return out{}, nil }
	a := e.app("w1")
	q, err := task.Handle(a, "quiet", handler)
	if err != nil {
		t.Fatal(err)
	}
	e.run(a)
	id, err := q.Enqueue(ctx, job{N: 1})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := q.Result(ctx, id); err != nil {
		t.Fatal(err)
	}
	b := e.app("w2")
	if _, err := task.Handle(b, "quiet", handler); err != nil {
		t.Fatal(err)
	}
	stopB := e.run(b)
	in := inspect.New(e.client, e.prefix, "shop")
	workers := func() []inspect.TaskWorker {
		r, err := in.Queue(ctx, "quiet")
		if err != nil {
			t.Fatal(err)
		}
		return r.Workers
	}
	redistest.Eventually(t, 10*time.Second, "w2 running", func() bool { return len(workers()) == 2 })
	// The subject is time passing: idle workers stay alive past TaskWorkerAlive.
	for end := time.Now().Add(inspect.TaskWorkerAlive + 2*time.Second); time.Now().Before(end); time.Sleep(250 * time.Millisecond) {
		ws := workers()
		if len(ws) != 2 || ws[0].Worker != "w1" || ws[1].Worker != "w2" || !ws[0].Alive || !ws[1].Alive {
			t.Fatalf("idle workers %+v: want w1 and w2, alive", ws)
		}
	}
	if err := stopB(); err != nil {
		t.Fatal(err)
	}
	if ws := workers(); len(ws) != 1 || ws[0].Worker != "w1" {
		t.Fatalf("after w2 stopped: %+v, want w1 alone", ws)
	}
}
