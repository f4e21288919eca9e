package middleware_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/leatdev/leat/app"
	"github.com/leatdev/leat/executor"
	"github.com/leatdev/leat/internal/tools/redistest"
	"github.com/leatdev/leat/middleware"
	"github.com/leatdev/leat/stream"
)

func TestRetryDecisions(t *testing.T) {
	errTemp, errPerm := errors.New("temporary"), errors.New("permanent")
	mw := middleware.Retry(middleware.RetryOptions{Max: 3, Initial: 100 * time.Millisecond, MaxBackoff: 300 * time.Millisecond,
		Jitter: -1, Retryable: func(err error) bool { return !errors.Is(err, errPerm) }})
	call := func(deliveries int64, err error) error {
		h := middleware.Chain(func(context.Context, *middleware.Message) error { return err }, mw)
		return h(context.Background(), &middleware.Message{Entries: []middleware.Entry{{ID: "1-0", Deliveries: deliveries}}})
	}
	after := func(err error) time.Duration {
		var ra *executor.RetryAfterError
		if !errors.As(err, &ra) {
			t.Fatalf("%v is not a RetryAfter", err)
		}
		return ra.After
	}
	if err := call(1, nil); err != nil {
		t.Fatal(err)
	}
	// Exponential, capped, no jitter here.
	for i, want := range []time.Duration{100 * time.Millisecond, 200 * time.Millisecond, 300 * time.Millisecond} {
		if err := call(int64(i+1), errTemp); after(err) != want || !errors.Is(err, errTemp) {
			t.Errorf("attempt %d: %v, want a wait of %s", i+1, err, want)
		}
	}
	if err := call(4, errTemp); !errors.Is(err, app.ErrSkipRetry) || !errors.Is(err, errTemp) {
		t.Errorf("past the maximum: %v", err)
	}
	if err := call(1, errPerm); !errors.Is(err, app.ErrSkipRetry) {
		t.Errorf("not retryable: %v", err)
	}
	if err := call(1, app.SkipRetry(errTemp)); !errors.Is(err, app.ErrSkipRetry) {
		t.Errorf("SkipRetry: %v", err)
	}
	if err := call(1, app.RetryAfter(7*time.Second, errTemp)); after(err) != 7*time.Second {
		t.Errorf("RetryAfter not honoured: %v", err)
	}
	// Jitter stays within [w/2, w].
	j := middleware.Retry(middleware.RetryOptions{Initial: 100 * time.Millisecond})
	h := middleware.Chain(func(context.Context, *middleware.Message) error { return errTemp }, j)
	for range 50 {
		d := after(h(context.Background(), &middleware.Message{Entries: []middleware.Entry{{Deliveries: 1}}}))
		if d < 50*time.Millisecond || d > 100*time.Millisecond {
			t.Fatalf("jittered wait %s", d)
		}
	}
}

// Retry's maximum replaces the processor's retry limit; past it, the
// failure policy applies.
func TestRetryInTheRuntime(t *testing.T) {
	e := newEnv(t)
	a, s := e.newApp(1, nil)
	var (
		mu       sync.Mutex
		attempts []int64
	)
	err := app.Process(a, s, "p", func(ctx context.Context, events *stream.Events[event]) error {
		for ev := range events.All() {
			mu.Lock()
			attempts = append(attempts, ev.Deliveries)
			mu.Unlock()
			return errors.New("dependency down")
		}
		return nil
	}, app.Retries(0), app.OnError(app.Ignore),
		app.Use(middleware.Retry(middleware.RetryOptions{Max: 4, Initial: time.Millisecond, MaxBackoff: 5 * time.Millisecond})))
	if err != nil {
		t.Fatal(err)
	}
	startWorker(t, a)
	send(t, s, event{Key: "k", Seq: 1})
	redistest.Eventually(t, 10*time.Second, "the event ignored after its retries", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(attempts) == 5 && pending(t, e, a) == 0
	})
	mu.Lock()
	defer mu.Unlock()
	for i, d := range attempts {
		if d != int64(i+1) {
			t.Fatalf("deliveries %v", attempts)
		}
	}
}
