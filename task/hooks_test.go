package task_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/leatdev/leat/app"
	"github.com/leatdev/leat/executor"
	"github.com/leatdev/leat/internal/tools/redistest"
	"github.com/leatdev/leat/task"
)

// appHooked is app with hooks in its Config.Hooks.
func (e *env) appHooked(id string, hooks ...executor.Hook) *app.App {
	e.t.Helper()
	a, err := app.New(app.Config{Name: "shop", Client: e.client, KeyPrefix: e.prefix, WorkerID: id,
		Logger: testLogger(), LeaderLease: time.Second, Hooks: hooks})
	if err != nil {
		e.t.Fatal(err)
	}
	return a
}

// runRecorder records what HookTaskRun reports.
type runRecorder struct {
	mu   sync.Mutex
	runs []string // "queue outcome attempt"
	took []time.Duration
}

func (r *runRecorder) OnTaskRun(queue, outcome string, attempt int, took time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.runs = append(r.runs, fmt.Sprintf("%s %s %d", queue, outcome, attempt))
	r.took = append(r.took, took)
}

func (r *runRecorder) count() map[string]int {
	r.mu.Lock()
	defer r.mu.Unlock()
	m := map[string]int{}
	for _, s := range r.runs {
		m[s]++
	}
	return m
}

// Every recorded run is reported once to the task hooks of the app's
// Config.Hooks, with its outcome, attempt number and handler time.
func TestHookTaskRun(t *testing.T) {
	e := newEnv(t)
	ctx := ctxT(t)
	rec := &runRecorder{}
	a := e.appHooked("w1", rec)
	var mu sync.Mutex
	tries := map[int]int{}
	q, err := task.Handle(a, "hooked", func(ctx context.Context, tk *task.Task[job]) (out, error) {
		mu.Lock()
		tries[tk.Payload.N]++
		n := tries[tk.Payload.N]
		mu.Unlock()
		switch {
		case tk.Payload.N == 1 && n == 1:
			return out{}, errors.New("once") // retried, then succeeds
		case tk.Payload.N == 2:
			return out{}, errors.New("always") // dead after 1 + 2 attempts
		case tk.Payload.N == 3:
			return out{}, task.SkipRetry(errors.New("bad input"))
		}
		time.Sleep(2 * time.Millisecond) // a measurable handler time
		return out{Double: 2 * tk.Payload.N}, nil
	}, task.MaxRetries(2), task.Backoff(10*time.Millisecond, 20*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	e.run(a)
	var ids []string
	for _, n := range []int{0, 1, 2, 3, 4} {
		id, err := q.Enqueue(ctx, job{N: n})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	for _, id := range ids {
		if _, err := q.Wait(ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	want := map[string]int{
		"hooked succeeded 1": 2, // tasks 0 and 4
		"hooked retried 1":   2, // tasks 1 and 2
		"hooked succeeded 2": 1, // task 1
		"hooked retried 2":   1, // task 2
		"hooked dead 3":      1, // task 2
		"hooked failed 1":    1, // task 3
	}
	redistest.Eventually(t, 10*time.Second, "every run reported", func() bool { return fmt.Sprint(rec.count()) == fmt.Sprint(want) })
	rec.mu.Lock()
	defer rec.mu.Unlock()
	for i, d := range rec.took {
		if d <= 0 {
			t.Errorf("run %q took %v", rec.runs[i], d)
		}
	}
}
