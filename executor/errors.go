package executor

import (
	"errors"
	"fmt"
	"time"

	"github.com/leatdev/leat/internal/core"
)

// ErrHalted is matched (errors.Is) by the error Run returns when the Halt
// policy stopped the worker; the error also wraps the processor's own.
var ErrHalted = errors.New("executor: halted by the failure policy")

// ErrSkipRetry is matched by errors returned with SkipRetry.
var ErrSkipRetry = core.ErrSkipRetry

// SkipRetry marks err as not worth retrying: the failure policy applies at
// once, without the retries in place (an invalid record, say).
func SkipRetry(err error) error { return core.SkipRetry(err) }

// RetryAfter asks for the next retry in place after d instead of the
// backoff (a rate-limited dependency that said when to come back). It still
// counts as an attempt: once the retries are used up, the failure policy
// applies.
func RetryAfter(d time.Duration, err error) error { return &RetryAfterError{After: d, Err: err} }

// RetryAfterError is returned by RetryAfter (and app.RetryAfter,
// task.RetryAfter): it asks for the next retry after After instead of the
// backoff. Match it with errors.As.
type RetryAfterError struct {
	// After is the wait before the next retry.
	After time.Duration
	// Err is the error of the attempt.
	Err error
	// Decided is set by middleware.Retry, which counts attempts itself:
	// its own maximum then replaces the processor's retry limit.
	Decided bool
}

func (e *RetryAfterError) Error() string {
	if e.Err == nil {
		return fmt.Sprintf("retry after %s", e.After)
	}
	return fmt.Sprintf("retry after %s: %v", e.After, e.Err)
}

// Unwrap returns the error of the attempt.
func (e *RetryAfterError) Unwrap() error { return e.Err }

// retryDelay returns the wait asked for by a RetryAfter in err's chain, and
// whether a retry middleware decided on it.
func retryDelay(err error) (d time.Duration, ok, decided bool) {
	var ra *RetryAfterError
	if errors.As(err, &ra) {
		return max(ra.After, 0), true, ra.Decided
	}
	return 0, false, false
}
