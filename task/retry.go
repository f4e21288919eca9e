package task

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"time"
)

// ErrSkipRetry, returned by a handler (or wrapped: see SkipRetry), ends the
// task as failed at once, without its remaining retries.
var ErrSkipRetry = errors.New("task: skip retry")

// SkipRetry wraps err so that it ends the task as failed at once: the
// error matches both err and ErrSkipRetry.
func SkipRetry(err error) error {
	if err == nil {
		return ErrSkipRetry
	}
	return fmt.Errorf("%w: %w", ErrSkipRetry, err)
}

// RetryAfterError asks for the next attempt after a given delay instead of
// the queue's backoff (a rate-limited API's Retry-After, say).
type RetryAfterError struct {
	Delay time.Duration
	Err   error
}

func (e *RetryAfterError) Error() string {
	if e.Err == nil {
		return fmt.Sprintf("retry after %s", e.Delay)
	}
	return fmt.Sprintf("retry after %s: %v", e.Delay, e.Err)
}

func (e *RetryAfterError) Unwrap() error { return e.Err }

// RetryAfter returns an error that fails the attempt and asks for the next
// one after d (when retries remain).
func RetryAfter(d time.Duration, err error) error { return &RetryAfterError{Delay: d, Err: err} }

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
	if errors.As(err, &ra) && ra.Delay >= 0 {
		return ra.Delay
	}
	return backoff(attempt, s.backoffMin, s.backoffMax)
}
