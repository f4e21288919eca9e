package middleware_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/leatdev/leat/middleware"
)

func TestTimeout(t *testing.T) {
	h := middleware.Chain(func(ctx context.Context, m *middleware.Message) error {
		<-ctx.Done() // a body that honours its context
		return ctx.Err()
	}, middleware.Timeout(20*time.Millisecond))
	start := time.Now()
	err := h(context.Background(), &middleware.Message{Entries: []middleware.Entry{{ID: "1-0"}}})
	if !errors.Is(err, middleware.ErrTimeout) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("error %v", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("took %s", d)
	}
	// A fast handler is unaffected; a cancelled parent is not a timeout.
	fast := middleware.Chain(func(context.Context, *middleware.Message) error { return nil }, middleware.Timeout(time.Second))
	if err := fast(context.Background(), &middleware.Message{}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := h(ctx, &middleware.Message{}); errors.Is(err, middleware.ErrTimeout) || !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled parent: %v", err)
	}
}
