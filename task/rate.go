package task

import (
	"context"
	"fmt"
	"time"

	"github.com/leatdev/leat/internal/rdb"
)

// SetRate sets the queue's rate limit live, for every worker, in place of
// the Rate option of their programs: at most n tasks started per window
// over all workers. n = 0 (and window 0) lifts the limit, whatever the
// option says; ClearRate goes back to the option. The running workers
// apply it at their next fetch; those waiting out a window fetch again at
// once (a message on the queue's channel) or, if that is lost, within a
// second. The current window keeps its count and its end: a new window
// lasts the new length. A rate out of range is refused (ErrBadSetting).
func (q *core) SetRate(ctx context.Context, n int, window time.Duration) error {
	if n < 0 || (n > 0 && window < time.Millisecond) || (n == 0 && window != 0) {
		return fmt.Errorf("%w: rate %d per %s: need n >= 1 and a window of at least 1ms, or 0 per 0 for no limit", ErrBadSetting, n, window)
	}
	err := rdb.SetLiveRate(ctx, q.rdb, q.ks.TaskConfig(q.name), rdb.Rate{N: n, Window: window})
	if err != nil {
		return err
	}
	return q.wakeFetchers(ctx)
}

// ClearRate removes the rate limit SetRate set: the Rate option of each
// worker's program applies again.
func (q *core) ClearRate(ctx context.Context) error {
	if err := rdb.ClearLiveRate(ctx, q.rdb, q.ks.TaskConfig(q.name)); err != nil {
		return err
	}
	return q.wakeFetchers(ctx)
}

// wakeFetchers makes the workers waiting for a Resume or the end of a rate
// window fetch again at once.
func (q *core) wakeFetchers(ctx context.Context) error {
	return rdb.WakeFetchers(ctx, q.rdb, q.ks.TaskCancel(q.name))
}

// RateLimit is a queue's rate limit: at most N tasks started per Window
// over all workers; N 0 is no limit.
type RateLimit struct {
	N      int
	Window time.Duration
}

// LiveRate returns the rate limit SetRate set (N 0: no limit), and false
// when none is set (each worker's Rate option applies).
func (q *core) LiveRate(ctx context.Context) (RateLimit, bool, error) {
	v, ok, err := rdb.ReadLiveRate(ctx, q.rdb, q.ks.TaskConfig(q.name))
	if !ok {
		return RateLimit{}, false, err
	}
	return parseLiveRate(v)
}

// parseLiveRate reads the live settings' rate field.
func parseLiveRate(v string) (RateLimit, bool, error) {
	r, err := rdb.ParseLiveRate(v)
	if err != nil {
		return RateLimit{}, false, err
	}
	return RateLimit{N: r.N, Window: r.Window}, true, nil
}
