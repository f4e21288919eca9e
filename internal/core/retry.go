package core

import (
	"errors"
	"fmt"
)

// ErrSkipRetry is matched by errors returned with SkipRetry (re-exported
// by packages executor, app and task, used by package middleware): one
// sentinel for processors, task handlers and middleware.
var ErrSkipRetry = errors.New("leat: skip retry")

// SkipRetry marks err as not worth retrying: the failure policy applies at
// once, without the retries in place.
func SkipRetry(err error) error { return fmt.Errorf("%w: %w", ErrSkipRetry, err) }
