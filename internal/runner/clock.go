package runner

import (
	"context"
	"time"

	"github.com/leatdev/leat/internal/rdb"
)

// One clock. Times that executors of different machines compare are
// Redis' (TIME), never a local wall clock, which may be set differently on
// each machine: heartbeat deadlines and the live members (scripts), the
// time of a stop report, and the start of an executor that a halt report is
// compared with (prepare).

// startedOnServer returns when Run started, on the server's clock: the
// server's time now minus the time elapsed since Run started, measured on
// the local monotonic clock (a wall clock set differently, or stepped
// meanwhile, plays no part). The error is at most half a round trip.
func (e *Executor) startedOnServer(ctx context.Context) (time.Time, error) {
	e.startedMu.Lock()
	defer e.startedMu.Unlock()
	if !e.startedAt.IsZero() {
		return e.startedAt, nil
	}
	before := time.Now()
	now, err := rdb.ServerTime(ctx, e.client)
	if err != nil {
		return time.Time{}, err
	}
	mid := before.Add(time.Since(before) / 2)
	e.startedAt = now.Add(-mid.Sub(e.started)) // both monotonic readings
	return e.startedAt, nil
}
