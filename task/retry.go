package task

import (
	"errors"
	"math/rand/v2"
	"time"

	"github.com/leatdev/leat/executor"
	streamcore "github.com/leatdev/leat/internal/core"
)

// ErrSkipRetry, returned by a handler (or wrapped: see SkipRetry), ends the
// task as failed at once, without its remaining retries. It is the same
// sentinel as app.ErrSkipRetry: one for processors, task handlers and
// middleware.
var ErrSkipRetry = streamcore.ErrSkipRetry

// SkipRetry wraps err so that it ends the task as failed at once: the
// error matches both err and ErrSkipRetry.
func SkipRetry(err error) error {
	if err == nil {
		return ErrSkipRetry
	}
	return streamcore.SkipRetry(err)
}

// RetryAfterError asks for the next attempt after a given delay (After)
// instead of the queue's backoff (a rate-limited API's Retry-After, say).
// It is the type app.RetryAfter returns too.
type RetryAfterError = executor.RetryAfterError

// RetryAfter returns an error that fails the attempt and asks for the next
// one after d (when retries remain).
func RetryAfter(d time.Duration, err error) error { return &RetryAfterError{After: d, Err: err} }

// backoff is the delay before the retry following attempt (1 = the first
// run): min·2^(attempt−1), capped at max, with jitter in its upper half.
func backoff(attempt int, minDelay, maxDelay time.Duration) time.Duration {
	d := minDelay
	for i := 1; i < attempt && d < maxDelay; i++ {
		d *= 2
	}
	d = min(d, maxDelay)
	half := d / 2
	return half + rand.N(half+1)
}

// retryDelay is the delay before retrying after err on attempt.
func (s *settings) retryDelay(attempt int, err error) time.Duration {
	var ra *RetryAfterError
	if errors.As(err, &ra) && ra.After >= 0 {
		return ra.After
	}
	return backoff(attempt, s.backoffMin, s.backoffMax)
}
