package task_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/leatdev/leat/internal/tools/redistest"
	"github.com/leatdev/leat/task"
)

// TestGlobalConcurrency: a queue's global concurrency caps its running
// tasks over all workers, whatever each worker's own concurrency; lowered
// live, no new task starts until fewer run; lifted, each worker runs up to
// its own again. Tasks held back are not lost: every one succeeds.
func TestGlobalConcurrency(t *testing.T) {
	e := newEnv(t)
	ctx := ctxT(t)
	var running, most atomic.Int32
	release := make(chan struct{})
	handler := func(ctx context.Context, tk *task.Task[int]) (int, error) {
		n := running.Add(1)
		defer running.Add(-1)
		for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
		}
		select {
		case <-release:
		case <-ctx.Done():
		}
		return tk.Payload, nil
	}
	client := e.app("client")
	q, err := task.Declare[int, int](client, "shared")
	if err != nil {
		t.Fatal(err)
	}
	for _, bad := range []int{-1, 1_000_001} {
		if err := q.SetGlobalConcurrency(ctx, bad); err == nil || !strings.Contains(err.Error(), "global concurrency") {
			t.Fatalf("SetGlobalConcurrency(%d) = %v, want a refusal", bad, err)
		}
	}
	if err := q.SetGlobalConcurrency(ctx, 3); err != nil {
		t.Fatal(err)
	}
	if n, err := q.GlobalConcurrency(ctx); err != nil || n != 3 {
		t.Fatalf("GlobalConcurrency = %d, %v, want 3", n, err)
	}
	const tasks = 40
	for i := range tasks {
		if _, err := q.Enqueue(ctx, i); err != nil {
			t.Fatal(err)
		}
	}
	// Three workers of five each: fifteen slots, three tasks at once.
	for _, id := range []string{"w1", "w2", "w3"} {
		a := e.app(id)
		if _, err := task.Handle(a, "shared", handler, task.Concurrency(5)); err != nil {
			t.Fatal(err)
		}
		e.run(a)
	}
	releaseUntil := func(done int, what string, check func()) {
		t.Helper()
		deadline := time.Now().Add(60 * time.Second)
		for {
			c, err := q.Counts(ctx)
			if err == nil && c[task.Succeeded] >= int64(done) {
				return
			}
			check()
			if time.Now().After(deadline) {
				t.Fatalf("%s: %v %v", what, c, err)
			}
			select {
			case release <- struct{}{}:
			case <-time.After(10 * time.Millisecond):
			}
		}
	}
	redistest.Eventually(t, 20*time.Second, "three tasks running", func() bool { return running.Load() == 3 })
	releaseUntil(15, "15 tasks done under a cap of 3", func() {
		if m := most.Load(); m > 3 {
			t.Fatalf("%d tasks ran at once under a global concurrency of 3", m)
		}
	})
	// Lowered live to 1: once the tasks running end, one at a time.
	if err := q.SetGlobalConcurrency(ctx, 1); err != nil {
		t.Fatal(err)
	}
	for running.Load() > 1 {
		select {
		case release <- struct{}{}:
		case <-time.After(10 * time.Millisecond):
		}
	}
	most.Store(running.Load())
	releaseUntil(25, "25 tasks done under a cap of 1", func() {
		if m := most.Load(); m > 1 {
			t.Fatalf("%d tasks ran at once under a global concurrency of 1", m)
		}
	})
	// Lifted: the workers' own concurrency applies again.
	if err := q.SetGlobalConcurrency(ctx, 0); err != nil {
		t.Fatal(err)
	}
	redistest.Eventually(t, 20*time.Second, "more than one task running without the cap", func() bool { return running.Load() > 3 })
	releaseUntil(tasks, "every task done", func() {})
	c, err := q.Counts(ctx)
	if err != nil || c[task.Succeeded] != tasks || c[task.Pending] != 0 || c[task.Active] != 0 {
		t.Fatalf("counts %v %v, want %d succeeded", c, err, tasks)
	}
	if n, err := q.GlobalConcurrency(ctx); err != nil || n != 0 {
		t.Fatalf("GlobalConcurrency after lifting = %d, %v", n, err)
	}
}
