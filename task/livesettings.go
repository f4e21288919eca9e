// Live settings: a running worker follows the concurrency and rate set
// live in the queue's config hash (SetConcurrency, SetRate) and its
// program's ConcurrencyFunc, rereading them as it touches its tasks, and
// listens on the queue's channel for cancellations and for resumes and
// live rate changes that wake its fetchers.

package task

import (
	"context"
	"errors"
	"fmt"

	"github.com/leatdev/leat/internal/rdb"
)

// ErrBadSetting is matched by the error of SetRate, SetConcurrency and
// SetGlobalConcurrency for a value out of range; their other errors are
// Redis's.
var ErrBadSetting = errors.New("task: bad live setting")

// readLimit applies the concurrency set with SetConcurrency, else the
// program's, and the queue's ConcurrencyFunc, if any, and notes the rate
// set live.
func (w *worker) readLimit(ctx context.Context) {
	live, err := rdb.LiveLimits(ctx, w.share.bg, w.q.ks.TaskConfig(w.q.name))
	if err != nil {
		if w.q.set.concFn == nil {
			return // nothing known has changed
		}
		live = []any{nil, nil, nil}
	} else {
		w.readLiveRate(live[1])
		w.readGlobal(live[2])
	}
	c, _ := live[0].(string)
	v, ok := rdb.ParseLiveConcurrency(c)
	if !ok {
		v = w.q.set.concurrency // none set live (or cleared): the program's
	}
	if fn := w.q.set.concFn; fn != nil {
		v = w.modified(fn, v)
	}
	m := w.q.maxConcurrency()
	w.mu.Lock()
	switch {
	case v > m && !w.capped:
		w.q.log.Warn("task concurrency above this worker's maximum: capped", "concurrency", v, "max", m)
		w.capped = true
		v = m
	case v > m:
		v = m
	default:
		w.capped = false
	}
	grew := v > w.limit
	if v != w.limit {
		w.q.log.Info("task concurrency changed", "from", w.limit, "to", v)
	}
	if v < w.limit && w.endRead != nil {
		w.endRead() // a blocking read waits for the slots reserved before
	}
	w.limit = v
	w.mu.Unlock()
	if grew {
		w.signal()
	}
}

// listen cancels running tasks whose cancellation is published, and wakes
// the fetchers of a paused queue when it is resumed, and those waiting out a
// rate window when the live rate changes.
func (w *worker) listen(ctx context.Context) {
	unsubscribe := w.share.hub.subscribe(ctx, w.q.ks.TaskCancel(w.q.name), func(payload string) {
		if payload == rdb.ResumeMessage {
			w.readRate(ctx) // a live rate changed, maybe: known before the fetchers wake
			w.wake()
			return
		}
		w.mu.Lock()
		r := w.active[payload]
		w.mu.Unlock()
		if r != nil {
			r.cancel(ErrCancelled)
		}
	})
	<-ctx.Done()
	unsubscribe()
}

// modified returns fn(configured), at least 1; the current limit when fn
// panics.
func (w *worker) modified(fn func(int) int, configured int) (v int) {
	w.mu.Lock()
	v = w.limit
	w.mu.Unlock()
	defer func() {
		if r := recover(); r != nil {
			w.q.log.Error("concurrency function panicked; keeping the concurrency", "panic", fmt.Sprint(r), "concurrency", v)
		}
	}()
	return max(fn(configured), 1)
}

// readRate notes the rate set live (see readLiveRate).
func (w *worker) readRate(ctx context.Context) {
	v, ok, err := rdb.ReadLiveRate(ctx, w.share.bg, w.q.ks.TaskConfig(w.q.name))
	switch {
	case ok:
		w.readLiveRate(v)
	case err == nil:
		w.readLiveRate(nil)
	}
}

// readLiveRate notes whether the live settings' rate field (v, nil when
// absent) sets a limit. A limit the worker did not know of may have left
// entries a blocking read gave pending here without a recovery: one is run.
func (w *worker) readLiveRate(v any) {
	text, _ := v.(string)
	r, err := rdb.ParseLiveRate(text) // "" (none) does not parse
	rated := err == nil && r.N > 0
	if !w.liveRate.Swap(rated) && rated {
		w.setRecover()
	}
}
