package task_test

import (
	"context"
	"errors"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/leatdev/leat/task"
)

// TestRetriesBackoffDeadRequeue: a failing task is tried 1 + MaxRetries
// times with exponential backoff within its bounds, is dead after the
// last, and runs again when requeued.
func TestRetriesBackoffDeadRequeue(t *testing.T) {
	e := newEnv(t)
	ctx := ctxT(t)
	a := e.app("w1")
	var mu sync.Mutex
	var starts []time.Time
	var heal atomic.Bool
	q, err := task.Handle(a, "flaky", func(ctx context.Context, tk *task.Task[job]) (out, error) {
		mu.Lock()
		starts = append(starts, time.Now())
		mu.Unlock()
		if heal.Load() {
			return out{Double: 1}, nil
		}
		return out{}, errors.New("boom")
	}, task.MaxRetries(3), task.Backoff(100*time.Millisecond, 250*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	e.run(a)
	id, err := q.Enqueue(ctx, job{N: 1})
	if err != nil {
		t.Fatal(err)
	}
	in, err := q.Wait(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if in.State != task.Dead || in.Attempts != 4 || in.Error != "boom" {
		t.Fatalf("info %+v", in)
	}
	mu.Lock()
	if len(starts) != 4 {
		t.Fatalf("%d attempts, want 4", len(starts))
	}
	// Delay before retry k: min(100ms·2^(k−1), 250ms), jittered in its
	// upper half; the promotion adds a few milliseconds. A retry is never
	// early; how late it can be is a bound on a CPU of its own, checked when
	// scripts/test runs this test alone (LEAT_TEST_TIMING unset).
	timing := os.Getenv("LEAT_TEST_TIMING") != "later"
	for k, want := range []time.Duration{100 * time.Millisecond, 200 * time.Millisecond, 250 * time.Millisecond} {
		gap := starts[k+1].Sub(starts[k])
		if gap < want/2 || (timing && gap > want+150*time.Millisecond) {
			t.Errorf("gap before attempt %d is %s, want %s..%s", k+2, gap, want/2, want)
		}
	}
	mu.Unlock()
	checkCounts(t, e, "flaky", map[task.State]int64{task.Dead: 1})

	heal.Store(true)
	if err := q.Requeue(ctx, id); err != nil {
		t.Fatal(err)
	}
	if r, err := q.Result(ctx, id); err != nil || r.Double != 1 {
		t.Fatal(r, err)
	}
	if err := q.Requeue(ctx, id); !errors.Is(err, task.ErrFinished) {
		t.Fatal(err)
	}
	checkCounts(t, e, "flaky", map[task.State]int64{task.Succeeded: 1})
}

// TestSkipRetryAndRetryAfter: SkipRetry fails a task at once; RetryAfter
// sets the delay of the next attempt.
func TestSkipRetryAndRetryAfter(t *testing.T) {
	e := newEnv(t)
	ctx := ctxT(t)
	a := e.app("w1")
	var mu sync.Mutex
	starts := map[int][]time.Time{}
	q, err := task.Handle(a, "q", func(ctx context.Context, tk *task.Task[job]) (out, error) {
		mu.Lock()
		starts[tk.Payload.N] = append(starts[tk.Payload.N], time.Now())
		mu.Unlock()
		switch {
		case tk.Payload.N == 1:
			return out{}, task.SkipRetry(errors.New("bad input"))
		case tk.Attempt == 1:
			return out{}, task.RetryAfter(400*time.Millisecond, errors.New("busy"))
		}
		return out{Double: tk.Attempt}, nil
	}, task.Backoff(time.Millisecond, time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	e.run(a)
	id1, _ := q.Enqueue(ctx, job{N: 1})
	id2, _ := q.Enqueue(ctx, job{N: 2})
	_, err = q.Result(ctx, id1)
	if !errors.Is(err, task.ErrFailed) || !strings.Contains(err.Error(), "bad input") {
		t.Fatal(err)
	}
	in, _ := q.Info(ctx, id1)
	if in.State != task.Failed || in.Attempts != 1 {
		t.Fatalf("%+v", in)
	}
	if r, err := q.Result(ctx, id2); err != nil || r.Double != 2 {
		t.Fatal(r, err)
	}
	mu.Lock()
	defer mu.Unlock()
	if gap := starts[2][1].Sub(starts[2][0]); gap < 400*time.Millisecond || gap > 700*time.Millisecond {
		t.Fatalf("retry-after gap %s", gap)
	}
	// a failed task can be requeued too
	if err := q.Requeue(ctx, id1); err != nil {
		t.Fatal(err)
	}
}

// TestTimeout: an attempt over its timeout has its context cancelled with
// ErrTimeout and counts as failed.
func TestTimeout(t *testing.T) {
	e := newEnv(t)
	ctx := ctxT(t)
	a := e.app("w1")
	var causes sync.Map
	q, err := task.Handle(a, "slow", func(ctx context.Context, tk *task.Task[job]) (out, error) {
		if tk.Payload.N == 0 {
			<-ctx.Done()
			causes.Store(tk.Attempt, context.Cause(ctx))
			return out{}, ctx.Err()
		}
		return out{}, nil
	}, task.Timeout(100*time.Millisecond), task.MaxRetries(1), task.Backoff(time.Millisecond, time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	e.run(a)
	start := time.Now()
	id, _ := q.Enqueue(ctx, job{N: 0})
	in, err := q.Wait(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if in.State != task.Dead || in.Attempts != 2 || !strings.Contains(in.Error, "timed out") {
		t.Fatalf("%+v", in)
	}
	if el := time.Since(start); el < 200*time.Millisecond || el > 3*time.Second {
		t.Fatalf("two timed-out attempts took %s", el)
	}
	for _, k := range []int{1, 2} {
		if c, _ := causes.Load(k); !errors.Is(c.(error), task.ErrTimeout) {
			t.Fatalf("attempt %d cause %v", k, c)
		}
	}
	// a per-task timeout overrides the queue's
	id, _ = q.Enqueue(ctx, job{N: 0}, task.WithTimeout(time.Second), task.WithMaxRetries(0))
	start = time.Now()
	if _, err := q.Wait(ctx, id); err != nil || time.Since(start) < time.Second {
		t.Fatal(err, time.Since(start))
	}
}
