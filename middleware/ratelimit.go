package middleware

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/leatdev/leat/internal/rdb"
)

// RateOptions configure RateLimit.
type RateOptions struct {
	// PerSecond is the rate: events per second. Required.
	PerSecond float64
	// Burst is how many events may go at once after a quiet spell.
	// Default 1 (evenly spaced).
	Burst int
	// PerKey limits each partition key on its own rather than the whole
	// processor.
	PerKey bool
}

// ErrRateConfig is returned by the handlers of a RateLimit with a rate
// that is not positive.
var ErrRateConfig = errors.New("middleware: rate limit needs a positive rate")

// RateLimit returns a middleware holding a processor's events to
// PerSecond (or each partition key's, with PerKey) across every worker of
// the app: the limit's state is in Redis (GCRA, one script call per event
// on the server's clock), so ten workers share one limit. A limited event
// waits for its turn, honouring the context; it is never dropped. A batch
// takes as many slots as it has events. A Redis error fails the handling,
// which the processor retries like any other error.
func RateLimit(o RateOptions) Middleware {
	interval := time.Duration(0)
	if o.PerSecond > 0 {
		interval = time.Duration(float64(time.Second) / o.PerSecond)
	}
	return func(next Handler) Handler {
		return func(ctx context.Context, m *Message) error {
			if interval <= 0 {
				return ErrRateConfig
			}
			ks := rdb.NewKeySpace(m.KeyPrefix, m.App)
			var wait time.Duration
			for i := range m.Entries {
				var key []byte
				if o.PerKey {
					key = m.Entries[i].Key
				}
				w, err := rdb.RateReserve(ctx, m.Client, ks.RateLimit(m.Stream, m.Processor, key), interval, o.Burst)
				if err != nil {
					return fmt.Errorf("middleware: rate limit: %w", err)
				}
				wait = max(wait, w)
			}
			if wait > 0 {
				if err := waitFor(ctx, wait, nil); err != nil {
					return err
				}
			}
			return next(ctx, m)
		}
	}
}
