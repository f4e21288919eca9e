// The fetch loop: a worker's fetchers (two, so that one fills the slots
// that free while the other's call is on its round trip) each reserve the
// slots free, take tasks (take: a script read when tasks are ready, else a
// blocking read of the ready streams) and start them, and wait when the
// queue is paused, over its rate, or failing. The calls that take tasks
// follow the lost-reply protocol (lostreply.go).

package task

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/leatdev/leat/internal/rdb"
	"github.com/redis/go-redis/v9"
)

// fetchers is how many fetches of a worker may be under way at once: while
// one fetch is on its round trip, the slots that free meanwhile are filled
// by the next, so a worker whose handlers are quick is not bound by one
// round trip per concurrency's worth of tasks.
const fetchers = 2

// fetchWait bounds how long a fetcher waits for half the slots to be free
// (see reserve) before it fetches for the slots free.
const fetchWait = time.Millisecond

// fetch takes tasks while ctx lasts and starts each at once: the worker
// holds no unstarted tasks but those of the fetches under way between the
// read and their start (handed back when ctx ended meanwhile). Each fetch
// takes the slots free when it begins, so the tasks taken never exceed the
// concurrency, but after a lost reply (see lost).
func (w *worker) fetch(ctx, runCtx context.Context) {
	var wg sync.WaitGroup
	for range fetchers {
		wg.Add(1)
		go func() { defer wg.Done(); w.fetchLoop(ctx, runCtx) }()
	}
	wg.Wait()
	// Calls cut short by the stop: send them once more, so that the tasks
	// they took, if they ran, go back to the queue now.
	for _, again := range w.lost.again {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
		got, err := again(sctx, 0, nil)
		cancel()
		if err == nil {
			for i := range got {
				w.handBack(&got[i])
			}
		}
	}
}

// fetchLoop is one of the worker's fetchers.
func (w *worker) fetchLoop(ctx, runCtx context.Context) {
	q := w.q
	failures := 0
	patient := true
	idle := false                    // the last take was a blocking read that found nothing
	wait := time.NewTimer(fetchWait) // await's, reused (Reset before each use)
	wait.Stop()
	defer wait.Stop()
	for ctx.Err() == nil {
		if !w.handlerReady(ctx) {
			continue
		}
		n, quota, short := w.reserve(patient)
		if n <= 0 {
			w.await(ctx, short, &patient, wait)
			continue
		}
		patient = true
		// Taken before the call: a wake-up that comes while it is under way
		// (the queue resumed, its live rate lifted) ends the wait after a
		// refusal at once, instead of being missed for the window's length.
		woken := w.wakeChan()
		got, err := w.take(ctx, n, quota, idle)
		idle = err == nil && len(got) == 0
		if errors.Is(err, rdb.ErrPaused) {
			w.unreserve(n)
			w.setPaused(true)
			w.awaitWake(ctx, w.poll, woken)
			continue
		}
		if errors.Is(err, rdb.ErrGlobalFull) {
			// a worker finishing a task wakes this one (WakeGlobalWaiters)
			w.unreserve(n)
			w.noteGlobal(true)
			w.awaitWake(ctx, w.poll, woken)
			continue
		}
		var limited *rdb.RateLimitedError
		if errors.As(err, &limited) {
			w.unreserve(n)
			w.awaitWake(ctx, limited.Wait, woken)
			continue
		}
		if err != nil {
			w.unreserve(n)
			if ctx.Err() != nil {
				break
			}
			failures++
			q.log.Warn("task fetch failed", "error", err)
			sleep(ctx, failureWait(failures))
			continue
		}
		failures = 0
		w.setPaused(false)
		for i := range got {
			t := &got[i]
			if ctx.Err() != nil {
				w.handBack(t)
				continue
			}
			w.start(runCtx, t)
		}
		w.unreserve(n)
	}
}

// handlerReady waits until the queue's handler can run tasks (FetchWhen):
// false when ctx ended, or after a poll when the wait failed.
func (w *worker) handlerReady(ctx context.Context) bool {
	wait := w.q.set.fetchWhen
	if wait == nil {
		return true
	}
	if err := wait(ctx); err != nil {
		if ctx.Err() == nil {
			w.q.log.Warn("task handler not ready: fetching no tasks", "error", err)
			sleep(ctx, w.poll)
		}
		return false
	}
	return true
}

// handBack gives a task taken but not started back to the queue.
func (w *worker) handBack(t *rdb.Fetched) {
	w.report(ended{Outcome: rdb.Outcome{ID: t.ID, Entry: t.Entry, Level: t.Level, Kind: rdb.Handback}})
}

// await waits for a slot to free; when short, at most fetchWait (on t,
// the fetcher's timer), after which the next fetch is not patient.
func (w *worker) await(ctx context.Context, short bool, patient *bool, t *time.Timer) {
	if !short {
		select {
		case <-ctx.Done():
		case <-w.freed:
		}
		return
	}
	t.Reset(fetchWait)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-w.freed:
	case <-t.C:
		*patient = false
	}
}

// readBlock bounds a blocking read that a stop cannot interrupt (see
// block.go), so a stopping worker returns soon.
const readBlock = 500 * time.Millisecond

// take fetches up to n tasks: a call whose reply was lost first (see
// lostreply.go), then the tasks of entries a lost blocking read left pending,
// then those ready at once in one script call, else it blocks on the ready
// streams for a while. After a blocking read that found nothing (idle) the
// script call is skipped: nothing was ready then, and whatever became ready
// since is a new entry the next blocking read returns at once; an idle
// queue costs its workers a blocking read per readBlock, not also a script.
// (A paused or rate-limited queue holds back what such a read gives: see
// the given call.)
func (w *worker) take(ctx context.Context, n int, quota []int, idle bool) ([]rdb.Fetched, error) {
	q := w.q
	again, recover := w.toSendAgain()
	if again != nil {
		got, err := w.sendCall(ctx, again, n, quota)
		if err != nil || len(got) > 0 {
			return got, err
		}
	}
	if recover {
		if !w.enterOwn(ctx) {
			w.setRecover()
			return nil, ctx.Err()
		}
		got, err := w.sendCall(ctx, w.ownCall(), n, quota)
		// more may be left: when it took all it could, or the queue's rate
		// (its program's, or one set live) cut it short
		if err != nil || len(got) == n || (w.rated() && len(got) > 0) {
			w.setRecover()
		}
		if err != nil || len(got) > 0 {
			return got, err
		}
	}
	if !idle {
		got, err := w.sendCall(ctx, w.readCall(), n, quota)
		if err != nil || len(got) > 0 {
			return got, err
		}
	}
	streams := make([]string, 0, len(q.set.levels))
	for l := range q.set.levels {
		streams = append(streams, q.ks.TaskStream(q.name, l))
	}
	if !w.enterGiven(ctx) {
		return nil, ctx.Err()
	}
	// Not cancelled by ctx: a read cut short could leave entries read but
	// not marked; a stop interrupts it, or the block is short (block.go).
	res, err := w.blockingRead(ctx, streams, n)
	if errors.Is(err, redis.Nil) {
		w.leaveGiven()
		return nil, nil
	}
	if err != nil {
		w.leaveGiven() // entries it read, if any, are for the recovery
		w.setRecover()
		return nil, err
	}
	var entries []rdb.Entry
	for _, s := range res {
		level, _ := strconv.Atoi(s.Stream[strings.LastIndexByte(s.Stream, ':')+1:])
		for _, m := range s.Messages {
			e := rdb.Entry{Level: level, ID: m.ID}
			if v, ok := m.Values["t"].(string); ok {
				e.Field, e.Value = "t", v
			} else if v, ok := m.Values["k"].(string); ok {
				e.Field, e.Value = "k", v
			} else {
				continue // not a task entry: the script drops it
			}
			entries = append(entries, e)
		}
	}
	if room := w.room(n); len(entries) > room {
		// The read took up to n entries per level (or, through the App's
		// reader, per stream of any queue), and the concurrency may have
		// been lowered since the n slots were reserved: the rest stay
		// pending here, taken first by the next call that may take them.
		entries = entries[:room]
		w.setRecover()
	}
	if len(entries) == 0 {
		w.leaveGiven()
		return nil, nil
	}
	return w.sendCall(context.WithoutCancel(ctx), w.givenCall(entries), n, quota)
}
