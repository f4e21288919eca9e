// Pausing a queue: Pause, Resume and Paused, and how its workers wait
// while it is paused or over its rate (setPaused, awaitWake): until a
// message on the queue's channel wakes them (wake), or within their poll
// if that message was lost.

package task

import (
	"context"
	"time"

	"github.com/leatdev/leat/internal/rdb"
)

// Pause stops the queue's workers, those running now and those started
// later, from starting its tasks until Resume: a fetch under way when it is
// paused is the last to start any. Tasks already running go on to their
// end and their outcomes are recorded; enqueueing goes on, and delayed and
// retrying tasks still become ready when due, so they wait in the queue.
// Pausing a paused queue changes nothing (it stays paused since the first
// Pause).
//
// The pause is checked in the same script step that takes tasks, so no
// worker misses it; a worker learns of a Resume at once (a message on the
// queue's channel) or, if that is lost, within a second.
func (q *core) Pause(ctx context.Context) error {
	return rdb.Pause(ctx, q.rdb, q.ks.TaskConfig(q.name))
}

// Resume lets the queue's workers start its tasks again after Pause.
// Resuming a queue that is not paused changes nothing.
func (q *core) Resume(ctx context.Context) error {
	if err := rdb.Unpause(ctx, q.rdb, q.ks.TaskConfig(q.name)); err != nil {
		return err
	}
	return q.wakeFetchers(ctx)
}

// Paused reports whether the queue is paused, and since when.
func (q *core) Paused(ctx context.Context) (bool, time.Time, error) {
	at, ok, err := rdb.PausedAt(ctx, q.rdb, q.ks.TaskConfig(q.name))
	return ok, at, err
}

// pausePoll is how often a worker of a paused queue, or one waiting out a
// rate window, tries a fetch again, in case it missed the message of a
// Resume or a live rate change.
var pausePoll = time.Second

// setPaused records whether the queue was found paused, logging changes.
func (w *worker) setPaused(paused bool) {
	changed := w.paused.Swap(paused) != paused
	if changed && paused {
		w.q.log.Info("task queue paused: starting no tasks until it is resumed")
	} else if changed {
		w.q.log.Info("task queue resumed")
	}
}

// awaitWake waits, after a fetch found the queue paused (d: w.poll) or its
// rate budget spent (d: to the window's end), for woken to be closed (a
// Resume, or a change of the live rate), or d, or w.poll, whichever comes
// first: a worker that missed the message (Pub/Sub delivers at most once:
// a connection lost at that moment loses it) fetches again within w.poll,
// not at the end of a window of an hour. woken is wakeChan's channel from
// before the call that was refused.
func (w *worker) awaitWake(ctx context.Context, d time.Duration, woken <-chan struct{}) {
	t := time.NewTimer(min(d, w.poll))
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-woken:
	case <-t.C:
	}
}

// wakeChan returns the channel that the next wake-up of the fetchers closes
// (wake).
func (w *worker) wakeChan() <-chan struct{} {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.resumed
}

// wake wakes every fetcher waiting on a channel wakeChan returned.
func (w *worker) wake() {
	w.mu.Lock()
	defer w.mu.Unlock()
	close(w.resumed)
	w.resumed = make(chan struct{})
}
