package task

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/leatdev/leat/app"
	"github.com/leatdev/leat/internal/clock"
	"github.com/leatdev/leat/internal/rdb"
	"github.com/redis/go-redis/v9"
)

// Leader-side work of a queue, run by the queue's leader only (a leader-only
// background task under the queue's own lease, rdb.TaskLease, held by one
// of the workers that handle the queue; once per term, in the term's
// context):
//
//   - promote: due delayed and retrying tasks move to the ready streams, at
//     most promoteBatch per atomic script call. The leader sleeps until the
//     next due time; an enqueue or retry that becomes the earliest due task
//     pushes to the queue's wake list, on which the leader blocks, so it
//     wakes for it at once. There is no polling interval: a task is moved
//     within milliseconds of its due time. With nothing due the leader
//     still looks every maxLeadSleep, in case a wake was lost (popped by a
//     wait whose reply broke off).
//   - reclaim: entries pending longer than the visibility timeout (their
//     worker died or froze: live workers touch their running tasks) are
//     acknowledged and their tasks made ready again, every half visibility.
//   - janitor: finished tasks whose retention ended and dead tasks past the
//     dead age are forgotten, keeping the counts exact: when the next
//     retention ends, at least a second and at most maxLeadSleep apart (a
//     task finishing with a retention shorter than those waiting, or a dead
//     task, waits at most that long).
//   - consumers: consumers of stopped workers are deleted every minute.
//   - cron: due ticks of the queue's cron schedules are enqueued.
const (
	promoteBatch = 1000
	reclaimBatch = 200
	janitorBatch = 1000
	janitorEvery = time.Second
	maxLeadSleep = 5 * time.Second

	// Consumers of stopped workers stay in the ready streams' group; those
	// with nothing pending, idle for consumerIdle, are deleted every
	// consumersEvery (a live worker's consumer that is deleted is created
	// again by its next read).
	consumersEvery = time.Minute
	consumerIdle   = 10 * time.Minute
)

// reclaimer is the consumer the leader's XAUTOCLAIM takes entries into;
// they are acknowledged in the same script.
const reclaimer = "leat-reclaimer"

// lead runs the queue's leader-side work until the leader term (ctx) ends.
func (q *core) lead(ctx context.Context) error {
	term, _ := app.LeaderTerm(ctx)
	sh := shareOf(ctx, q)
	defer sh.drop()
	clk := clock.Of(q.app)
	// The term's set-up is tried again until it works or the term ends:
	// lead is a leader-only task run once per term, and one that returned
	// while the term lasts would be recorded as done and never run again.
	for failures := 1; ; failures++ {
		// one queue's set-up at a time, as the workers' (share.setUp)
		sh.setup.Lock()
		err := q.createGroups(ctx)
		if err == nil {
			err = q.loadCron(ctx, clk.Now())
		}
		sh.setup.Unlock()
		if err == nil {
			break
		}
		if ctx.Err() != nil {
			return nil
		}
		q.log.Warn("task queue leader set-up failed: trying again", "error", err)
		sleep(ctx, min(time.Duration(failures)*200*time.Millisecond, 2*time.Second))
	}
	q.log.Info("task queue leader started", "term", term)
	// The cron schedules run on a goroutine of their own, on the app's
	// clock; one that finds a later leader term ends this term's work.
	ctx, stop := context.WithCancelCause(ctx)
	var cron sync.WaitGroup
	defer func() { stop(nil); cron.Wait() }()
	if len(q.cron) > 0 {
		cron.Add(1)
		go func() {
			defer cron.Done()
			if err := q.runCron(ctx, term, clk); err != nil {
				stop(err)
			}
		}()
	}
	// The wake list is watched apart (with the App's other leaders' lists,
	// or on a goroutine of its own: wake.go), while the loop sleeps on a
	// local timer: Redis checks blocking timeouts only at its hz (10 times
	// a second), too coarse for due times.
	wake := make(chan struct{}, 1)
	if sh.interruptible() {
		defer sh.wakes.add(q.ks.TaskWake(q.name), wake)()
	} else {
		var watching sync.WaitGroup
		watching.Add(1)
		go func() { defer watching.Done(); q.watchWake(ctx, wake) }()
		defer watching.Wait()
	}
	var nextReclaim, nextJanitor, nextConsumers time.Time
	failures := 0
	for ctx.Err() == nil {
		moved, nextDue, now, err := rdb.Promote(ctx, sh.bg, q.keys, promoteBatch)
		if err != nil {
			if ctx.Err() != nil {
				break
			}
			failures++
			q.log.Warn("promoting due tasks failed", "error", err)
			sleep(ctx, min(time.Duration(failures)*200*time.Millisecond, 2*time.Second))
			continue
		}
		failures = 0
		if moved == promoteBatch {
			continue // more are due
		}
		local := time.Now()
		if !local.Before(nextReclaim) {
			q.reclaim(ctx, sh.bg)
			nextReclaim = local.Add(q.set.visibility / 2)
		}
		if !local.Before(nextJanitor) {
			wait := maxLeadSleep
			if next := q.janitor(ctx, sh.bg); !next.IsZero() {
				wait = min(max(next.Sub(now), janitorEvery), maxLeadSleep)
			}
			nextJanitor = local.Add(wait)
		}
		if !local.Before(nextConsumers) {
			q.deleteIdleConsumers(ctx, sh.bg)
			nextConsumers = local.Add(consumersEvery)
		}
		wait := min(maxLeadSleep, time.Until(nextReclaim), time.Until(nextJanitor))
		if !nextDue.IsZero() {
			wait = min(wait, nextDue.Sub(now))
		}
		if wait > 0 {
			timer := time.NewTimer(wait)
			select {
			case <-ctx.Done():
			case <-timer.C:
			case <-wake:
			}
			timer.Stop()
		}
	}
	q.log.Info("task queue leader stopped", "term", term)
	if err := context.Cause(ctx); errors.Is(err, errDeposed) {
		return err
	}
	return nil
}

// watchWake signals wake each time the queue's wake list is pushed to,
// until ctx ends (within a second).
func (q *core) watchWake(ctx context.Context, wake chan<- struct{}) {
	for ctx.Err() == nil {
		err := rdb.WaitWake(ctx, q.rdb, q.ks.TaskWake(q.name), time.Second)
		switch {
		case err == nil:
			select {
			case wake <- struct{}{}:
			default:
			}
		case isNil(err) || ctx.Err() != nil:
		default:
			q.log.Warn("waiting for due tasks failed", "error", err)
			sleep(ctx, 200*time.Millisecond)
		}
	}
}

// reclaim makes ready again the tasks of workers that stopped touching
// them.
func (q *core) reclaim(ctx context.Context, c redis.UniversalClient) {
	for l := range q.set.levels {
		cursor := "0-0"
		for ctx.Err() == nil {
			next, n, dead, err := rdb.Reclaim(ctx, c, q.keys, reclaimer, q.set.visibility, reclaimBatch, l, cursor, q.set.deadMax, q.set.deadAge)
			if err != nil {
				q.log.Warn("reclaiming tasks failed", "error", err)
				return
			}
			if n > 0 || dead > 0 {
				q.log.Warn("reclaimed tasks of a lost worker", "tasks", n, "dead", dead)
			}
			if next == "0-0" || next == "" {
				break
			}
			cursor = next
		}
	}
}

// janitor forgets expired finished and dead tasks.
// It returns when the next retention ends (server time; zero when none
// waits, or unknown).
func (q *core) janitor(ctx context.Context, c redis.UniversalClient) time.Time {
	for ctx.Err() == nil {
		done, dead, next, err := rdb.Janitor(ctx, c, q.keys, janitorBatch, q.set.deadAge)
		if err != nil {
			q.log.Warn("task janitor failed", "error", err)
			return time.Time{}
		}
		if done < janitorBatch && dead < janitorBatch {
			return next
		}
	}
	return time.Time{}
}

// deleteIdleConsumers deletes the group's consumers that have nothing
// pending and were idle for consumerIdle.
func (q *core) deleteIdleConsumers(ctx context.Context, c redis.UniversalClient) {
	for l := range q.set.levels {
		stream := q.ks.TaskStream(q.name, l)
		if err := rdb.DeleteIdleConsumers(ctx, c, stream, q.worker, consumerIdle); err != nil {
			q.log.Warn("listing task consumers failed", "error", err)
			return
		}
	}
}
