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

// ErrProcessorStuck is returned by Run when a processor did not return
// within Grace plus a bounded extra wait after its context was cancelled.
var ErrProcessorStuck = errors.New("executor: processor ignores its context")

// PanicError is a panic recovered from a processor, with its stack.
type PanicError struct {
	Value any
	Stack []byte
}

func (e *PanicError) Error() string { return fmt.Sprintf("processor panic: %v\n%s", e.Value, e.Stack) }
