package runner

import (
	"context"
	"errors"
	"runtime"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/leatdev/leat/internal/core"
	"github.com/leatdev/leat/internal/lease"
)

// A fenced write made once trust in the lock ended (a processor resuming
// after a stall past its lock expiry, whose context ended with the trust)
// sends nothing and returns ErrNotOwner, even before the trust's timer has
// fired: the trust reads the clock itself.
func TestFencedAfterTrustEnded(t *testing.T) {
	life, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	p := &partition{life: life, cancel: cancel, lock: &lease.Lock{}}
	// On one P, a busy wait past the deadline has no scheduling point at
	// which the trust's timer could run: the deadline has passed, the timer
	// has not fired, as after a SIGSTOP.
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	until := lease.Now() + int64(time.Millisecond)
	p.trust = lease.NewTrust(life, until)
	defer p.trust.Cancel(nil)
	for lease.Now() <= until {
	}
	err := p.Fenced(p.trust, func(redis.Pipeliner) error {
		t.Error("a fenced write was prepared after trust ended")
		return nil
	})
	if !errors.Is(err, core.ErrNotOwner) {
		t.Fatalf("Fenced after trust ended: %v, want ErrNotOwner", err)
	}
}
