package executor

import (
	"errors"
	"fmt"
	"time"
)

// ErrHalted is matched (errors.Is) by the error Run returns when the Halt
// policy stopped the worker; the error also wraps the processor's own.
var ErrHalted = errors.New("executor: halted by the failure policy")

// ErrSkipRetry is matched by errors returned with SkipRetry.
var ErrSkipRetry = errors.New("executor: do not retry")

// SkipRetry marks err as not worth retrying: the failure policy applies at
// once, without the retries in place (an invalid record, say).
func SkipRetry(err error) error { return fmt.Errorf("%w: %w", ErrSkipRetry, err) }

// RetryAfter asks for the next retry in place after d instead of the
// backoff (a rate-limited dependency that said when to come back). It still
// counts as an attempt: once the retries are used up, the failure policy
// applies.
func RetryAfter(d time.Duration, err error) error { return &RetryAfterError{After: d, Err: err} }

// RetryAfterError is returned by RetryAfter.
type RetryAfterError struct {
	After time.Duration
	Err   error
}

func (e *RetryAfterError) Error() string {
	return fmt.Sprintf("executor: retry after %s: %v", e.After, e.Err)
}

func (e *RetryAfterError) Unwrap() error { return e.Err }

// retryDelay returns the wait asked for by a RetryAfter in err's chain.
func retryDelay(err error) (time.Duration, bool) {
	var ra *RetryAfterError
	if errors.As(err, &ra) {
		return max(ra.After, 0), true
	}
	return 0, false
}
