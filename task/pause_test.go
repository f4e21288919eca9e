package task_test

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/leatdev/leat/app"
	"github.com/leatdev/leat/internal/rdb"
	"github.com/leatdev/leat/internal/tools/redistest"
	"github.com/leatdev/leat/task"
	"github.com/redis/go-redis/v9"
)

// messages is a slog handler that keeps the messages logged.
type messages struct {
	mu  sync.Mutex
	got []string
}

func (m *messages) Enabled(context.Context, slog.Level) bool { return true }
func (m *messages) Handle(_ context.Context, r slog.Record) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	msg := r.Message
	r.Attrs(func(a slog.Attr) bool { msg += " " + a.String(); return true })
	m.got = append(m.got, msg)
	return nil
}
func (m *messages) WithAttrs([]slog.Attr) slog.Handler { return m }
func (m *messages) WithGroup(string) slog.Handler      { return m }

func (m *messages) count(prefix string) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := 0
	for _, s := range m.got {
		if strings.HasPrefix(s, prefix) {
			n++
		}
	}
	return n
}

// A paused queue starts no task, neither already queued nor enqueued while
// paused, while the tasks running when it was paused finish and are
// recorded; Resume starts the waiting tasks at once (the worker's poll is
// 30s in tests: the Resume message woke it).
func TestPauseAndResume(t *testing.T) {
	e := newEnv(t)
	ctx := ctxT(t)
	logs := &messages{}
	a, err := app.New(app.Config{Name: "shop", Client: e.client, KeyPrefix: e.prefix, WorkerID: "w1", Logger: slog.New(logs)})
	if err != nil {
		t.Fatal(err)
	}
	var started atomic.Int32
	release := make(chan struct{})
	q, err := task.Handle(a, "p", func(ctx context.Context, tk *task.Task[job]) (out, error) {
		started.Add(1)
		if tk.Payload.N == 1 {
			<-release
		}
		return out{Double: 2 * tk.Payload.N}, nil
	}, task.Concurrency(4))
	if err != nil {
		t.Fatal(err)
	}
	e.run(a)
	for range 2 {
		if _, err := q.Enqueue(ctx, job{N: 1}); err != nil {
			t.Fatal(err)
		}
	}
	redistest.Eventually(t, 10*time.Second, "two tasks running", func() bool { return started.Load() == 2 })

	if paused, _, err := q.Paused(ctx); err != nil || paused {
		t.Fatalf("paused before Pause: %v, %v", paused, err)
	}
	if err := q.Pause(ctx); err != nil {
		t.Fatal(err)
	}
	paused, since, err := q.Paused(ctx)
	if err != nil || !paused || time.Since(since) > time.Minute {
		t.Fatalf("Paused after Pause: %v since %v, %v", paused, since, err)
	}
	if err := q.Pause(ctx); err != nil {
		t.Fatal(err)
	}
	if _, again, _ := q.Paused(ctx); !again.Equal(since) {
		t.Fatalf("a second Pause moved the time paused from %v to %v", since, again)
	}
	for range 4 {
		if _, err := q.Enqueue(ctx, job{N: 2}); err != nil {
			t.Fatal(err)
		}
	}
	redistest.Eventually(t, 10*time.Second, "the worker finding the queue paused", func() bool { return logs.count("task queue paused") == 1 })
	close(release)
	redistest.Eventually(t, 10*time.Second, "the two running tasks recorded", func() bool {
		n, err := q.Counts(ctx)
		return err == nil && n[task.Succeeded] == 2
	})
	// The two fetchers, with every slot free, find the queue paused: nothing
	// starts (the window is the worker's fetches after the slots freed).
	deadline := time.Now().Add(time.Second)
	for time.Now().Before(deadline) {
		if n := started.Load(); n != 2 {
			t.Fatalf("%d tasks started while the queue was paused, want 2 (those running before)", n)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if n, _ := q.Counts(ctx); n[task.Pending] != 4 || n[task.Active] != 0 {
		t.Fatalf("counts while paused: %v, want 4 pending", n)
	}

	if err := q.Resume(ctx); err != nil {
		t.Fatal(err)
	}
	redistest.Eventually(t, 10*time.Second, "the four waiting tasks run after Resume", func() bool {
		n, err := q.Counts(ctx)
		return err == nil && n[task.Succeeded] == 6
	})
	if paused, _, _ := q.Paused(ctx); paused {
		t.Fatal("still paused after Resume")
	}
	if logs.count("task queue resumed") != 1 {
		t.Fatalf("logged %v", logs.got)
	}
}

// A task whose entry a worker's blocking read gave while the queue was
// paused (the worker leaves it pending with itself) runs at once after
// Resume, on a queue of one level or of two, whatever the task's level: not
// when the leader reclaims the entry after the visibility timeout. The
// recovery that takes such entries waits for the worker's other fetcher's
// blocking read, which, idle, lasted until another task came. (The
// worker's poll is 30s in tests: the Resume message woke it.)
func TestResumeRunsEntriesHeldWhilePaused(t *testing.T) {
	for _, tc := range []struct {
		name   string
		levels []string // none: a queue of one level
		level  int
	}{
		{"one level", nil, 0},
		{"two levels, the first", []string{"high", "low"}, 0},
		{"two levels, the second", []string{"high", "low"}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			ctx := ctxT(t)
			opt, err := redis.ParseURL(redistest.URL(t))
			if err != nil {
				t.Fatal(err)
			}
			opt.ClientName = "resume-" + e.prefix
			c := redis.NewClient(opt)
			t.Cleanup(func() { _ = c.Close() })
			a, err := app.New(app.Config{Name: "shop", Client: c, KeyPrefix: e.prefix, WorkerID: "w1", Logger: testLogger()})
			if err != nil {
				t.Fatal(err)
			}
			var opts []task.Option
			var enqOpts []task.EnqueueOption
			if tc.levels != nil {
				opts = append(opts, task.Priorities(tc.levels...))
				enqOpts = append(enqOpts, task.Priority(tc.levels[tc.level]))
			}
			ran := make(chan string, 2)
			q, err := task.Handle(a, "p", func(ctx context.Context, tk *task.Task[job]) (out, error) {
				ran <- tk.ID
				return out{}, nil
			}, opts...)
			if err != nil {
				t.Fatal(err)
			}
			e.run(a)
			// A first task run, then the worker's fetchers wait in a
			// blocking read of every level.
			if _, err := q.Enqueue(ctx, job{N: 1}); err != nil {
				t.Fatal(err)
			}
			<-ran
			waitBlocked(t, e.client, opt.ClientName)
			if err := q.Pause(ctx); err != nil {
				t.Fatal(err)
			}
			id, err := q.Enqueue(ctx, job{N: 2}, enqOpts...)
			if err != nil {
				t.Fatal(err)
			}
			stream := rdb.NewKeySpace(e.prefix, "shop").TaskStream("p", tc.level)
			redistest.Eventually(t, 10*time.Second, "the worker holding the task's entry", func() bool {
				p, err := e.client.XPending(ctx, stream, rdb.TaskGroup).Result()
				return err == nil && p.Count == 1
			})
			if in, err := q.Info(ctx, id); err != nil || in.State != task.Pending {
				t.Fatalf("the task while paused: %+v, %v; want it pending", in, err)
			}
			if err := q.Resume(ctx); err != nil {
				t.Fatal(err)
			}
			// A bound of correctness, far below the visibility timeout
			// (30s), after which the leader would reclaim the entry.
			select {
			case got := <-ran:
				if got != id {
					t.Fatalf("ran task %s, want %s", got, id)
				}
			case <-time.After(10 * time.Second):
				in, err := q.Info(ctx, id)
				if err != nil {
					t.Fatal(err)
				}
				t.Fatalf("the task held while paused did not run within 10s of Resume: %s, worker %q", in.State, in.Worker)
			}
		})
	}
}
