package executor

import (
	"errors"
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

// RetryAfterError is returned by RetryAfter. Decided is set by
// middleware.Retry, whose own maximum then replaces the processor's retry
// limit.
type RetryAfterError = core.RetryAfterError

// retryDelay returns the wait asked for by a RetryAfter in err's chain, and
// whether a retry middleware decided on it.
func retryDelay(err error) (d time.Duration, ok, decided bool) {
	var ra *RetryAfterError
	if errors.As(err, &ra) {
		return max(ra.After, 0), true, ra.Decided
	}
	return 0, false, false
}
