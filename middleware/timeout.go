package middleware

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// ErrTimeout is matched (errors.Is) by the error of a handler whose
// context a Timeout cancelled.
var ErrTimeout = errors.New("middleware: handler timed out")

// Timeout returns a middleware cancelling the context of the handlers it
// wraps (the loop body gets it as Event.Context) after d. A handler that
// fails once its deadline passed fails with an error matching ErrTimeout
// and its own error. The loop body has to honour the context: a timeout
// cannot stop code that ignores it.
func Timeout(d time.Duration) Middleware {
	return func(next Handler) Handler {
		return func(ctx context.Context, m *Message) error {
			tctx, cancel := context.WithTimeout(ctx, d)
			defer cancel()
			err := next(tctx, m)
			if err != nil && ctx.Err() == nil && errors.Is(tctx.Err(), context.DeadlineExceeded) {
				return fmt.Errorf("%w after %s: %w", ErrTimeout, d, err)
			}
			return err
		}
	}
}
