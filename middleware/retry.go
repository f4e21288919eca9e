package middleware

import (
	"context"
	"errors"
	"math/rand/v2"
	"time"

	"github.com/leatdev/leat/executor"
	"github.com/leatdev/leat/internal/core"
)

// RetryOptions configure Retry. Zero fields take the defaults.
type RetryOptions struct {
	// Max is how many times a failing event (or batch) is retried after
	// its first attempt. Default 5.
	Max int
	// Initial is the wait before the first retry. Default 100ms.
	Initial time.Duration
	// MaxBackoff caps the wait. Default 30s.
	MaxBackoff time.Duration
	// Multiplier grows the wait after each retry. Default 2.
	Multiplier float64
	// Jitter is the fraction of each wait drawn at random: a wait w
	// becomes one between w×(1−Jitter) and w. Default 0.5; negative for
	// none.
	Jitter float64
	// Retryable says which errors are retried; the others go to the
	// failure policy at once. Default: all of them.
	Retryable func(error) bool
}

// Retry returns a middleware deciding whether and when a failing event
// (or batch) is retried in place: errors Retryable accepts are retried up
// to Max times, after a wait growing exponentially from Initial (with
// jitter) up to MaxBackoff; the others, and those past Max, go to the
// processor's failure policy at once. Its maximum replaces the processor's
// retry limit (app.Retries). An error made with app.SkipRetry goes to the
// policy at once; one made with app.RetryAfter keeps its wait. Attempts are
// counted by the entries' delivery counts, so they hold across workers.
func Retry(o RetryOptions) Middleware {
	if o.Max == 0 {
		o.Max = 5
	}
	if o.Initial <= 0 {
		o.Initial = 100 * time.Millisecond
	}
	if o.MaxBackoff <= 0 {
		o.MaxBackoff = 30 * time.Second
	}
	if o.Multiplier < 1 {
		o.Multiplier = 2
	}
	if o.Jitter == 0 {
		o.Jitter = 0.5
	}
	o.Jitter = min(max(o.Jitter, 0), 1)
	return func(next Handler) Handler {
		return func(ctx context.Context, m *Message) error {
			err := next(ctx, m)
			if err == nil || errors.Is(err, core.ErrSkipRetry) || errors.Is(err, core.ErrLoopLeft) {
				return err
			}
			if o.Retryable != nil && !o.Retryable(err) {
				return core.SkipRetry(err)
			}
			attempt := m.First().Deliveries // this attempt, 1 for the first
			if attempt > int64(o.Max) {
				return core.SkipRetry(err)
			}
			if ra := (*executor.RetryAfterError)(nil); errors.As(err, &ra) {
				return &executor.RetryAfterError{After: ra.After, Err: err, Decided: true}
			}
			return &executor.RetryAfterError{After: o.backoff(attempt), Err: err, Decided: true}
		}
	}
}

// backoff returns the wait after the attempt-th attempt failed.
func (o RetryOptions) backoff(attempt int64) time.Duration {
	w := float64(o.Initial)
	for i := int64(1); i < attempt && w < float64(o.MaxBackoff); i++ {
		w *= o.Multiplier
	}
	w = min(w, float64(o.MaxBackoff))
	w -= w * o.Jitter * rand.Float64()
	return time.Duration(w)
}
