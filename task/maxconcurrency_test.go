package task_test

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/leatdev/leat/app"
	"github.com/leatdev/leat/internal/tools/redistest"
	"github.com/leatdev/leat/task"
)

// syncBuffer is a log destination tests read while workers write.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) count(sub string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return strings.Count(s.b.String(), sub)
}

// TestMaxConcurrency: SetConcurrency refuses more than the app's maximum per
// worker; a worker that reads a live concurrency above its own maximum runs
// that many tasks at once, and says so once.
func TestMaxConcurrency(t *testing.T) {
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
	// A client with the default maximum (1,000).
	client := e.app("client")
	q, err := task.Handle(client, "capped", handler, task.Concurrency(2))
	if err != nil {
		t.Fatal(err)
	}
	if err := q.SetConcurrency(ctx, 1_000_000_000); err == nil || !strings.Contains(err.Error(), "maximum of 1000") {
		t.Fatalf("SetConcurrency(1e9): %v, want a refusal naming the maximum", err)
	}
	if err := q.SetConcurrency(ctx, app.DefaultMaxTaskConcurrency); err != nil {
		t.Fatal(err)
	}
	// A worker whose maximum is 3.
	var logs syncBuffer
	wa, err := app.New(app.Config{
		Name: "shop", Client: e.client, KeyPrefix: e.prefix, WorkerID: "w1", LeaderLease: time.Second,
		Logger: slog.New(slog.NewTextHandler(&logs, nil)), MaxTaskConcurrency: 3,
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := task.Handle(wa, "capped", handler, task.Concurrency(2)); err != nil {
		t.Fatal(err)
	}
	for i := range 10 {
		if _, err := q.Enqueue(ctx, i); err != nil {
			t.Fatal(err)
		}
	}
	e.run(wa)
	const capped = "task concurrency above this worker's maximum: capped"
	redistest.Eventually(t, 20*time.Second, "3 tasks running and the cap logged", func() bool {
		return running.Load() == 3 && logs.count(capped) == 1
	})
	for done := 0; done < 10; done++ {
		release <- struct{}{}
	}
	redistest.Eventually(t, 20*time.Second, "all tasks done", func() bool {
		c, err := q.Counts(ctx)
		return err == nil && c[task.Succeeded] == 10
	})
	if m := most.Load(); m != 3 {
		t.Errorf("at most %d tasks ran at once, want 3", m)
	}
	if n := logs.count(capped); n != 1 {
		t.Errorf("the cap was logged %d times, want once", n)
	}
}
