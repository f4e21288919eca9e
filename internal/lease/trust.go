package lease

import (
	"context"
	"errors"
	"sync/atomic"
	"time"
)

// ErrTrustExpired is the cause of a Trust that ended because its lease could
// no longer be trusted (no successful refresh in time).
var ErrTrustExpired = errors.New("lease: trust expired")

var monoStart = time.Now()

// Now returns a monotonic clock reading in nanoseconds. Trust deadlines are
// expressed on this clock, which keeps running while the process is stopped.
func Now() int64 { return int64(time.Since(monoStart)) }

// Margin is what trust keeps back from a lease's TTL (see the package doc).
func Margin(ttl time.Duration) time.Duration {
	return ttl/100 + min(ttl/10, 500*time.Millisecond)
}

// Until returns the end of trust in a lease of the given TTL whose last
// successful acquisition or refresh started at start (a Now reading).
func Until(start int64, ttl time.Duration) int64 { return start + int64(ttl-Margin(ttl)) }

// Trust is a context that ends when the holder of a lease must stop trusting
// it: at the deadline set by the last Extend, when Cancel is called, or when
// its parent ends. Deadline reports when trust ends at the latest. Err and
// Done compare the deadline with the clock on every call, so a goroutine
// that resumes after the process was frozen past the deadline sees the
// context ended at once, before the timer that also ends it has fired.
//
// Contexts derived from a Trust end when it ends, through the timer: only
// the Trust itself is exact to the instruction.
type Trust struct {
	ctx    context.Context
	cancel context.CancelCauseFunc
	until  atomic.Int64 // Now() reading
	timer  *time.Timer
}

// NewTrust returns a Trust that ends at until (a Now reading) unless
// extended.
func NewTrust(parent context.Context, until int64) *Trust {
	ctx, cancel := context.WithCancelCause(parent)
	t := &Trust{ctx: ctx, cancel: cancel}
	t.until.Store(until)
	t.timer = time.AfterFunc(time.Duration(until-Now()), t.fire)
	context.AfterFunc(ctx, func() { t.timer.Stop() })
	return t
}

// fire runs when the timer expires: end trust, or wait for the extended
// deadline.
func (t *Trust) fire() {
	if !t.expired() && t.ctx.Err() == nil {
		t.timer.Reset(time.Duration(t.until.Load() - Now()))
	}
}

// expired ends t if its deadline passed, and reports whether it did.
func (t *Trust) expired() bool {
	if Now() >= t.until.Load() {
		t.cancel(ErrTrustExpired)
		return true
	}
	return false
}

// Extend moves the end of trust to until (a Now reading) if that is later,
// and reports whether t is still trusted. Once ended, a Trust stays ended.
func (t *Trust) Extend(until int64) bool {
	if t.Err() != nil {
		return false
	}
	for {
		old := t.until.Load()
		if until <= old || t.until.CompareAndSwap(old, until) {
			return true
		}
	}
}

// Cancel ends t with cause.
func (t *Trust) Cancel(cause error) { t.cancel(cause) }

// Until returns the end of trust (a Now reading).
func (t *Trust) Until() int64 { return t.until.Load() }

// Remaining returns how long t is still trusted (0 or less once ended).
func (t *Trust) Remaining() time.Duration {
	if t.Err() != nil {
		return 0
	}
	return time.Duration(t.until.Load() - Now())
}

// Deadline implements context.Context: when trust ends at the latest.
func (t *Trust) Deadline() (time.Time, bool) {
	d := time.Now().Add(time.Duration(t.until.Load() - Now()))
	if pd, ok := t.ctx.Deadline(); ok && pd.Before(d) {
		return pd, true
	}
	return d, true
}

// Done implements context.Context.
func (t *Trust) Done() <-chan struct{} {
	if t.ctx.Err() == nil {
		t.expired()
	}
	return t.ctx.Done()
}

// Err implements context.Context.
func (t *Trust) Err() error {
	if err := t.ctx.Err(); err != nil {
		return err
	}
	t.expired()
	return t.ctx.Err()
}

// Ended reports whether t is known to have ended, without reading the
// clock: a deadline passed but not yet noticed (by Err, Done or the timer)
// does not count. For an early way out; Err is exact.
func (t *Trust) Ended() bool { return t.ctx.Err() != nil }

// Value implements context.Context. context.Cause of a Trust is the reason
// it ended (ErrTrustExpired, the cause given to Cancel, or its parent's).
func (t *Trust) Value(key any) any { return t.ctx.Value(key) }
