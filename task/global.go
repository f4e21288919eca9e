package task

import (
	"context"
	"fmt"

	"github.com/leatdev/leat/internal/rdb"
)

// maxGlobalConcurrency bounds SetGlobalConcurrency.
const maxGlobalConcurrency = 1_000_000

// SetGlobalConcurrency caps, live, the tasks of the queue running at once
// over all its workers at n (each worker still runs at most its own
// concurrency); n = 0 lifts the cap. The cap is kept in Redis and checked
// by the script that hands tasks out, against the queue's count of running
// tasks, so it holds whatever the number of workers; it stays until set
// again. Running tasks are not stopped when n is lowered: no new one starts
// until fewer than n run. A worker held back by the cap fetches again as
// soon as any worker finishes a task (a message on the queue's channel) or,
// if that is lost, within a second. A value out of range is refused
// (ErrBadSetting).
func (q *core) SetGlobalConcurrency(ctx context.Context, n int) error {
	if n < 0 || n > maxGlobalConcurrency {
		return fmt.Errorf("%w: global concurrency %d: want 1 to %d, or 0 for no cap", ErrBadSetting, n, maxGlobalConcurrency)
	}
	config := q.ks.TaskConfig(q.name)
	var err error
	if n == 0 {
		err = rdb.ClearLiveGlobal(ctx, q.rdb, config)
	} else {
		err = rdb.SetLiveGlobal(ctx, q.rdb, config, n)
	}
	if err != nil {
		return err
	}
	return q.wakeFetchers(ctx)
}

// GlobalConcurrency returns the queue's cap on its running tasks over all
// workers (SetGlobalConcurrency), 0 when none is set.
func (q *core) GlobalConcurrency(ctx context.Context) (int, error) {
	return rdb.ReadLiveGlobal(ctx, q.rdb, q.ks.TaskConfig(q.name))
}

// readGlobal notes whether the live settings' global field (v, nil when
// absent) sets a cap.
func (w *worker) readGlobal(v any) {
	text, _ := v.(string)
	_, capped := rdb.ParseLiveGlobal(text)
	w.noteGlobal(capped)
}

// noteGlobal records whether a global concurrency applies. A cap the worker
// did not know of may have left entries a blocking read gave pending here:
// a recovery takes them (as for a rate limit).
func (w *worker) noteGlobal(capped bool) {
	if !w.global.Swap(capped) && capped {
		w.setRecover()
	}
}

// wakeGlobalWaiters wakes the workers a global concurrency held back, after
// this worker recorded outcomes that freed room (one call per batch of
// outcomes, on queues with a cap only).
func (w *worker) wakeGlobalWaiters(ctx context.Context) {
	if !w.global.Load() {
		return
	}
	q := w.q
	if _, err := rdb.WakeGlobalWaiters(ctx, w.share.bg, q.ks.TaskConfig(q.name), q.ks.TaskCancel(q.name)); err != nil && ctx.Err() == nil {
		q.log.Warn("waking the workers held back by the global concurrency failed", "error", err)
	}
}
