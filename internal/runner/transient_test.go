package runner

import (
	"context"
	"errors"
	"io"
	"testing"
	"time"
)

// The backoff doubles from the first wait up to the cap, with jitter in
// [d/2, d], and never overflows.
func TestBackoff(t *testing.T) {
	for n, want := range map[int]time.Duration{1: 100 * time.Millisecond, 2: 200 * time.Millisecond, 4: 800 * time.Millisecond,
		6: 3200 * time.Millisecond, 7: 5 * time.Second, 60: 5 * time.Second, 100: 5 * time.Second} {
		for range 20 {
			if d := backoff(100*time.Millisecond, 5*time.Second, n); d < want/2 || d > want {
				t.Fatalf("retry %d: wait %s, want %s to %s", n, d, want/2, want)
			}
		}
	}
	if d := backoff(0, 0, 1); d != 0 {
		t.Fatalf("no backoff: %s", d)
	}
}

// ride tries a write again while it fails with a transient error, and not
// after another error or once its context ends.
func TestRide(t *testing.T) {
	t.Parallel()
	calls := 0
	err := ride(context.Background(), func(context.Context) error {
		calls++
		if calls < 3 {
			return io.EOF
		}
		return nil
	})
	if err != nil || calls != 3 {
		t.Fatalf("transient then ok: %v after %d calls", err, calls)
	}
	calls = 0
	boom := errors.New("boom")
	if err := ride(context.Background(), func(context.Context) error { calls++; return boom }); !errors.Is(err, boom) || calls != 1 {
		t.Fatalf("not transient: %v after %d calls", err, calls)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	calls = 0
	if err := ride(ctx, func(context.Context) error { calls++; return io.EOF }); !errors.Is(err, io.EOF) || calls < 2 {
		t.Fatalf("context ended: %v after %d calls", err, calls)
	}
}
