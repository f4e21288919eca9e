package middleware_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/leatdev/leat/app"
	"github.com/leatdev/leat/internal/tools/redistest"
	"github.com/leatdev/leat/middleware"
	"github.com/leatdev/leat/stream"
)

// After Failures consecutive failures the breaker opens: no call reaches
// the dependency during the cool-down, then one trial closes it, and the
// events go on in order with nothing lost.
func TestCircuitBreakerOpensAndCloses(t *testing.T) {
	e := newEnv(t)
	a, s := e.newApp(1, nil)
	var (
		down    atomic.Bool
		mu      sync.Mutex
		calls   []time.Time
		changes []string
		done    []int
	)
	down.Store(true)
	cool := 500 * time.Millisecond
	br := middleware.CircuitBreaker(middleware.BreakerOptions{Failures: 3, CoolDown: cool,
		OnChange: func(stream, processor string, partition int, open bool) {
			mu.Lock()
			changes = append(changes, fmt.Sprintf("%s/%s/%d open=%v", stream, processor, partition, open))
			mu.Unlock()
		}})
	err := app.Process(a, s, "p", func(ctx context.Context, events *stream.Events[event]) error {
		for ev := range events.All() {
			mu.Lock()
			calls = append(calls, time.Now())
			mu.Unlock()
			if down.Load() {
				return errors.New("dependency down")
			}
			mu.Lock()
			done = append(done, ev.Record.Seq)
			mu.Unlock()
		}
		return nil
	}, app.Use(br), app.Retries(100), app.Backoff(time.Millisecond, time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	startWorker(t, a)
	send(t, s, event{Key: "k", Seq: 1}, event{Key: "k", Seq: 2})
	redistest.Eventually(t, 5*time.Second, "the breaker open", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(changes) == 1
	})
	mu.Lock()
	opened := calls[len(calls)-1]
	if len(calls) != 3 {
		t.Errorf("%d calls before the breaker opened, want 3", len(calls))
	}
	mu.Unlock()
	// The trial after the cool-down fails: open again, one call only.
	redistest.Eventually(t, 5*time.Second, "a failed trial", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(changes) == 2
	})
	mu.Lock()
	if len(calls) != 4 || calls[3].Sub(opened) < cool {
		t.Errorf("trial: %d calls, %s after opening", len(calls), calls[len(calls)-1].Sub(opened))
	}
	mu.Unlock()
	down.Store(false)
	redistest.Eventually(t, 5*time.Second, "the breaker closed and the events done", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(done) == 2 && len(changes) == 3
	})
	mu.Lock()
	defer mu.Unlock()
	if fmt.Sprint(done) != "[1 2]" || changes[0] != "events/p/-1 open=true" || changes[1] != "events/p/-1 open=true" || changes[2] != "events/p/-1 open=false" {
		t.Fatalf("done %v, changes %v", done, changes)
	}
	if n := len(calls); n != 6 {
		t.Fatalf("%d calls, want 6 (3 failures, a failed trial, 2 successes)", n)
	}
}
