package leattest_test

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/leatdev/leat/app"
	"github.com/leatdev/leat/leattest"
	"github.com/leatdev/leat/middleware"
	"github.com/leatdev/leat/task"
)

// Task handlers run under the kit as in production: retries with backoff,
// dead tasks, results. WaitIdle waits for the task queues the app handles
// until nothing is pending, running or retrying; a task scheduled for later
// and a queue the app only declares are not waited for.
func TestTaskHandlers(t *testing.T) {
	k := leattest.New(t)
	var double *task.Queue[int, int]
	var other *task.Queue[int, int]
	var tries atomic.Int32
	a := k.App(func(cfg app.Config) (*app.App, error) {
		a, err := app.New(cfg)
		if err != nil {
			return nil, err
		}
		double, err = task.Handle(a, "double", func(ctx context.Context, tk *task.Task[int]) (int, error) {
			switch {
			case tk.Payload < 0:
				return 0, task.SkipRetry(errors.New("negative"))
			case tk.Payload == 7 && tries.Add(1) == 1:
				return 0, errors.New("flaky")
			}
			return 2 * tk.Payload, nil
		}, task.MaxRetries(2), task.Backoff(200*time.Millisecond, time.Second))
		if err != nil {
			return nil, err
		}
		other, err = task.Declare[int, int](a, "other") // run by another service
		return a, err
	})
	if got := task.Handled(a); len(got) != 1 || got[0] != "double" {
		t.Fatalf("handled queues %v, want [double]", got)
	}
	ctx := context.Background()
	ok, _ := double.Enqueue(ctx, 21)
	flaky, _ := double.Enqueue(ctx, 7)
	bad, _ := double.Enqueue(ctx, -1)
	later, _ := double.Enqueue(ctx, 1, task.Delay(time.Hour))
	if _, err := other.Enqueue(ctx, 1); err != nil {
		t.Fatal(err)
	}
	w := k.Start(a)
	w.WaitIdle()
	for id, want := range map[string]task.State{ok: task.Succeeded, flaky: task.Succeeded, bad: task.Failed, later: task.Scheduled} {
		in, err := double.Info(ctx, id)
		if err != nil || in.State != want {
			t.Fatalf("task %s: %+v %v, want %s", id, in, err, want)
		}
	}
	if in, _ := double.Info(ctx, flaky); in.Attempts != 2 || string(in.Result) != "14" {
		t.Fatalf("the flaky task: %+v, want its second attempt's result", in)
	}
	n, err := other.Counts(ctx)
	if err != nil || n[task.Pending] != 1 {
		t.Fatalf("the other queue: %v %v, want its task left pending", n, err)
	}
	if err := w.Stop(); err != nil {
		t.Fatal(err)
	}
}

// A task queue's cron schedule follows the kit's clock, like the app's
// background schedules: its ticks are enqueued as the test moves the clock.
func TestTaskCronOnTheKitsClock(t *testing.T) {
	k := leattest.New(t)
	var ran atomic.Int32
	var q *task.Queue[int, int]
	a := k.App(func(cfg app.Config) (*app.App, error) {
		a, err := app.New(cfg)
		if err != nil {
			return nil, err
		}
		q, err = task.Handle(a, "reports", func(ctx context.Context, tk *task.Task[int]) (int, error) {
			ran.Add(1)
			return tk.Payload, nil
		})
		if err == nil {
			err = q.Cron("nightly", "0 3 * * *", 7)
		}
		return a, err
	})
	w := k.Start(a)
	k.WaitScheduled(1) // the schedule waits for its first tick
	start := k.Now()
	next3am := time.Date(start.Year(), start.Month(), start.Day(), 3, 0, 0, 0, start.Location())
	if !next3am.After(start) {
		next3am = next3am.AddDate(0, 0, 1)
	}
	w.WaitIdle()
	if n := ran.Load(); n != 0 {
		t.Fatalf("the nightly task ran %d times before 3am", n)
	}
	for day := range 2 {
		k.Advance(next3am.AddDate(0, 0, day).Sub(k.Now()))
		k.WaitScheduled(1)
		w.WaitIdle()
		if n := ran.Load(); n != int32(day+1) {
			t.Fatalf("the nightly task ran %d times by 3am of day %d, want %d", n, day+1, day+1)
		}
	}
	id := "cron:nightly:" + strconv.FormatInt(next3am.UnixMilli(), 10)
	if in, err := q.Info(context.Background(), id); err != nil || in.State != task.Succeeded {
		t.Fatalf("task %s: %+v %v", id, in, err)
	}
	if err := w.Stop(); err != nil {
		t.Fatal(err)
	}
}

// A paused queue's tasks wait under the kit as in production, and WaitIdle
// does not wait for them; once resumed, they run.
func TestPausedQueue(t *testing.T) {
	k := leattest.New(t)
	var q *task.Queue[int, int]
	a := k.App(func(cfg app.Config) (*app.App, error) {
		a, err := app.New(cfg)
		if err != nil {
			return nil, err
		}
		q, err = task.Handle(a, "double", func(ctx context.Context, tk *task.Task[int]) (int, error) {
			return 2 * tk.Payload, nil
		})
		return a, err
	})
	ctx := context.Background()
	if err := q.Pause(ctx); err != nil {
		t.Fatal(err)
	}
	id, err := q.Enqueue(ctx, 21)
	if err != nil {
		t.Fatal(err)
	}
	w := k.Start(a)
	w.WaitIdle()
	if in, err := q.Info(ctx, id); err != nil || in.State != task.Pending {
		t.Fatalf("a task of the paused queue: %+v %v, want pending", in, err)
	}
	if err := q.Resume(ctx); err != nil {
		t.Fatal(err)
	}
	w.WaitIdle()
	if in, err := q.Info(ctx, id); err != nil || in.State != task.Succeeded || string(in.Result) != "42" {
		t.Fatalf("the task after the resume: %+v %v", in, err)
	}
	if err := w.Stop(); err != nil {
		t.Fatal(err)
	}
}

// Task middleware (the app's and the queue's) and task headers work under
// the kit as in production.
func TestTaskMiddlewareAndHeaders(t *testing.T) {
	k := leattest.New(t)
	var q *task.Queue[int, string]
	var seen []string
	var mu sync.Mutex
	note := func(name string) middleware.TaskMiddleware {
		return func(next middleware.TaskHandler) middleware.TaskHandler {
			return func(ctx context.Context, r *middleware.TaskRun) error {
				mu.Lock()
				seen = append(seen, name+" "+r.Headers["tenant"])
				mu.Unlock()
				return next(ctx, r)
			}
		}
	}
	a := k.App(func(cfg app.Config) (*app.App, error) {
		cfg.TaskMiddleware = []middleware.TaskMiddleware{note("app")}
		a, err := app.New(cfg)
		if err != nil {
			return nil, err
		}
		q, err = task.Handle(a, "greet", func(ctx context.Context, tk *task.Task[int]) (string, error) {
			return tk.Headers["tenant"] + " " + strconv.Itoa(tk.Payload), nil
		}, task.Use(note("queue")))
		return a, err
	})
	ctx := context.Background()
	id, err := q.Enqueue(ctx, 1, task.Headers(map[string]string{"tenant": "acme"}))
	if err != nil {
		t.Fatal(err)
	}
	w := k.Start(a)
	w.WaitIdle()
	if res, err := q.Result(ctx, id); err != nil || res != "acme 1" {
		t.Fatalf("result %q (%v), want the handler to see the task's headers", res, err)
	}
	mu.Lock()
	if len(seen) != 2 || seen[0] != "app acme" || seen[1] != "queue acme" {
		t.Fatalf("middleware ran %q, want the app's then the queue's, with the headers", seen)
	}
	mu.Unlock()
	if err := w.Stop(); err != nil {
		t.Fatal(err)
	}
}
