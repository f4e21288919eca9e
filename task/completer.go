// The completer: one goroutine per worker records the outcomes of its
// tasks (finish.lua), batching whatever arrived during the last round trip,
// trying a failed batch again while that can help, and reports them to the
// queue's hooks.

package task

import (
	"cmp"
	"context"
	"strings"
	"time"

	"github.com/leatdev/leat/internal/rdb"
	"github.com/leatdev/leat/internal/topology"
)

// completeBatch is how many outcomes one script call records.
const completeBatch = 128

// outcomeBuffer is how many outcomes a worker holds for its completer;
// recordWait is the first wait before a failed batch is recorded again.
const (
	outcomeBuffer = 4096
	recordWait    = 200 * time.Millisecond
)

// complete records outcomes until quit is closed and done drained:
// whatever arrived while the last round trip was under way goes in the
// next one. A batch that fails with an error that passes (Redis
// unreachable, restarting, at maxmemory) is tried again with a backoff
// until the queue's visibility timeout has passed since its first failure:
// by then the leader reclaims the tasks, which run again (recording them
// stays harmless: a late success is kept). Any other failure is tried six
// times, so that a mistake does not hold the outcomes after it up. While
// the worker stops (stop: Run's context ended) a batch is tried six times
// at least and until the grace period has passed since the stop (as the
// handlers are waited for), at most stopRecordWait apart: the stop ends a
// wait under way, and an unreachable Redis holds the stop up by the grace
// period and about 3s a batch at most.
//
// The completer never takes w.mu: handlers wait for room on done holding
// no lock (report), so a stretch of failures with done full stops nothing
// but the handlers that finish meanwhile.
func (w *worker) complete(stop context.Context) {
	q := w.q
	ctx := context.WithoutCancel(stop)
	base := cmp.Or(q.set.recordWait, recordWait)
	var timer *time.Timer // the waits', made at the first
	var stopAt time.Time  // when the completer saw the stop
	var batch []ended     // reused: one completer
	for {
		o, ok := w.nextOutcome()
		if !ok {
			return
		}
		clear(batch) // the last batch's results
		batch = append(batch[:0], o)
	drain:
		for len(batch) < 16*completeBatch {
			select {
			case o := <-w.done:
				batch = append(batch, o)
			default:
				break drain
			}
		}
		var failed time.Time // the batch's first failure
		for try := 0; ; try++ {
			err := w.record(ctx, batch)
			if err == nil {
				break
			}
			if failed.IsZero() {
				failed = time.Now()
			}
			// Only a failure that passes (Redis unreachable, restarting, at
			// maxmemory) is worth the wait; one that names a mistake (a
			// permission the Redis user lacks) is not.
			passing := topology.IsTransient(err) || strings.HasPrefix(err.Error(), "OOM ")
			stopping := stop.Err() != nil
			if stopping && stopAt.IsZero() {
				stopAt = time.Now()
			}
			late := stopping && time.Since(stopAt) >= q.set.grace
			if try >= 5 && (!passing || late) || time.Since(failed) >= q.set.visibility {
				q.log.Error("task outcomes lost: the tasks run again when reclaimed", "tasks", len(batch), "error", err)
				break
			}
			wait := min(time.Duration(try+1)*base, 10*base)
			if stopping {
				wait = min(wait, stopRecordWait)
			}
			q.log.Warn("recording task outcomes failed", "error", err, "retry_in", wait)
			if timer == nil {
				timer = time.NewTimer(wait)
				defer timer.Stop()
			} else {
				timer.Reset(wait)
			}
			var stopped <-chan struct{} // a stop during the wait ends it
			if !stopping {
				stopped = stop.Done()
			}
			select {
			case <-timer.C:
			case <-stopped:
				timer.Stop()
			}
		}
	}
}

// stopRecordWait bounds the waits between tries of a batch of outcomes
// while the worker stops.
const stopRecordWait = 500 * time.Millisecond

// nextOutcome returns the next outcome for the completer; false once quit
// is closed and done drained.
func (w *worker) nextOutcome() (ended, bool) {
	select {
	case o := <-w.done:
		return o, true
	case <-w.quit:
		select {
		case o := <-w.done:
			return o, true
		default:
			return ended{}, false
		}
	}
}

// ended is the outcome of a run, with what the hooks report of it.
type ended struct {
	rdb.Outcome
	attempt int
	took    time.Duration // the handler's run
}

// record runs finish.lua for batch on one pipeline, then reports the
// outcomes recorded to the queue's hooks.
func (w *worker) record(ctx context.Context, batch []ended) error {
	q := w.q
	outs := w.outs[:0] // reused: one completer
	for _, e := range batch {
		outs = append(outs, e.Outcome)
	}
	defer func() { clear(outs); w.outs = outs[:0] }()
	cmds, err := rdb.FinishAll(ctx, q.rdb, q.keys, q.worker, q.set.deadMax, q.set.deadAge, outs, completeBatch)
	if err != nil {
		return err
	}
	w.hook(batch, cmds)
	w.wakeGlobalWaiters(ctx)
	w.advanceFlows(ctx, batch, cmds)
	return nil
}

// hook reports the outcomes of batch that the finish.lua calls cmds
// recorded (completeBatch outcomes per call) to the queue's hooks.
func (w *worker) hook(batch []ended, cmds rdb.FinishReplies) {
	if len(w.q.hooks) == 0 {
		return
	}
	for c := range cmds {
		states := cmds.States(c)
		for i, st := range states {
			o := outcomeOf(st)
			if o == "" || c*completeBatch+i >= len(batch) {
				continue
			}
			e := batch[c*completeBatch+i]
			for _, h := range w.q.hooks {
				h.OnTaskRun(w.q.name, o, e.attempt, e.took)
			}
		}
	}
}

// report hands an outcome to the completer, unless the worker gave up on
// its handlers and stopped.
//
// It holds no lock while it waits for room on done (the completer failing
// to record, with done full): the fetchers, the toucher and the stop take
// w.mu, and would all wait behind it. Run closes quit, not done, so a
// handler that returns after the stop gave up on it never sends on a
// closed channel: it reports nothing (what reaches done after the
// completer drained it is dropped with the channel). Every report of a
// worker that did not give up on its handlers comes before quit is closed
// (Run waits for the handlers and the fetchers first), so the completer,
// which drains done before it returns, records them all.
func (w *worker) report(o ended) {
	select {
	case w.done <- o:
	case <-w.quit:
	}
}
