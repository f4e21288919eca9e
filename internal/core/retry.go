package core

import (
	"errors"
	"fmt"
	"time"
)

// ErrSkipRetry is matched by errors returned with SkipRetry (re-exported
// by packages executor, app and task, used by package middleware): one
// sentinel for processors, task handlers and middleware.
var ErrSkipRetry = errors.New("leat: skip retry")

// SkipRetry marks err as not worth retrying: the failure policy applies at
// once, without the retries in place.
func SkipRetry(err error) error { return fmt.Errorf("%w: %w", ErrSkipRetry, err) }

// RetryAfterError asks for the next retry in place after After instead of
// the backoff.
type RetryAfterError struct {
	After time.Duration
	Err   error
	// Decided is set by a retry middleware that counts attempts itself:
	// the processor's own retry limit does not apply to the error.
	Decided bool
}

func (e *RetryAfterError) Error() string {
	if e.Err == nil {
		return fmt.Sprintf("retry after %s", e.After)
	}
	return fmt.Sprintf("retry after %s: %v", e.After, e.Err)
}

func (e *RetryAfterError) Unwrap() error { return e.Err }
