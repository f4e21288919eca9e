// The lost-reply protocol. A fetch call whose reply is lost (the link or
// the server failed after Redis ran it, or the process stalled past the
// read timeout) may have taken tasks: they are active with this worker, or
// their entries pending with it, and nothing else would run them before
// the visibility timeout. fetch.lua hands out again what a call took when
// the call is sent again as it was, so the worker sends it again before it
// does anything else (take), and takes the entries left pending with it
// with a recovery of its own. A refusal (the queue paused, or over its
// rate: heldBack) is a reply: that call took nothing.
//
// Which failure each part handles, and the tests that prove it:
//
//   - A read call's reply is lost (a script read of ready tasks): the call
//     has a slot and an ID of its own (readCall, memoCall, claimSlot),
//     fetch.lua keeps what it took per worker and slot, and the call is
//     sent again with the same ID (sendCall, sendAgain, toSendAgain). Two
//     fetchers' calls are of different slots, so one's memo survives the
//     other's reads. TestLostFetchReplies, TestLostReadRepliesBesideOtherReads;
//     internal/rdb's TestFetchCallRunAgain, TestFetchCallsOfOtherSlots.
//   - A given call's reply is lost (the call that takes the entries a
//     blocking read gave): it is sent again with the same entries
//     (givenCall) and hands out the same tasks. TestFetchReplyLost.
//   - A given call's reply is lost under a rate limit: the run sent again
//     may start fewer entries than it was given, and the rest stay pending
//     with the worker for the recovery (givenCall). TestLostGivenReplyUnderRate.
//   - A blocking read's reply is lost: the entries it read are pending with
//     the worker and nobody took their tasks, so the next call is the own
//     recovery (lost.recover, setRecover, ownCall: fetch.lua's mode "own"),
//     itself sent again after a lost reply. TestLostFetchReplies;
//     internal/rdb's TestFetchOwnCallRunAgain, TestOwnCallsWalkPendingOnce.
//   - Entries left pending with the worker without a lost reply: a given
//     call refused while paused or cut short by the rate (its program's, or
//     one set live: rated, readLiveRate), or entries beyond the slots after
//     the concurrency was lowered (take): the same recovery takes them.
//     TestResumeRunsEntriesHeldWhilePaused, TestLiveRate,
//     TestLoweredConcurrencyWhileIdle; internal/rdb's TestFetchWhilePaused,
//     TestFetchUnderQueueRate.
//   - The recovery and a given call racing for the same entries: the
//     recovery would start their tasks and the given call hand them out
//     again, so they would run twice. The given and own sections keep them
//     apart (enterGiven, enterOwn and their gate); a recovery ends an idle
//     blocking read's wait rather than wait for the next enqueue.
//     TestRecoveryWaitsForGivenEntries, TestResumeRunsEntriesHeldWhilePaused.
//   - Calls still to send again when the worker stops: fetch sends them
//     once more and hands their tasks back. No test of its own.
//
// TestLostRepliesUnderLoad loses the replies of every kind of call, and of
// the outcome calls, under a rate limit and through pauses: every task
// still runs once.

package task

import (
	"context"
	"errors"
	"math/bits"
	"sync"

	"github.com/leatdev/leat/internal/rdb"
)

// lost is what the worker's fetchers have to do after lost replies
// (guarded by worker.mu).
//
// A call whose reply was lost may have taken tasks: they are active with
// this worker, and nothing else would run them before the visibility
// timeout. So the call is sent again, as it was (again), before anything
// else: fetch.lua hands out the tasks of its first run again. The tasks it
// returns may then exceed the slots free, by at most the first call's
// count. A blocking read whose reply was lost leaves entries pending with
// this worker whose tasks nobody took: the next call takes those first
// (recover).
type lost struct {
	again   []fetchCall
	recover bool
}

// fetchCall is a fetch call to send again: n and quota are the slots free
// now (0 and nil: none; only what the first run took).
type fetchCall func(ctx context.Context, n int, quota []int) ([]rdb.Fetched, error)

// sendCall runs c, and queues it to be sent again when its reply was lost.
func (w *worker) sendCall(ctx context.Context, c fetchCall, n int, quota []int) ([]rdb.Fetched, error) {
	got, err := c(ctx, n, quota)
	if lostReply(err) {
		w.sendAgain(c)
	}
	return got, err
}

// lostReply reports whether a fetch call failed with err without a reply
// that says what it did: an error, but a refusal (held back: it took
// nothing).
func lostReply(err error) bool { return err != nil && !heldBack(err) }

// sendAgain queues a call whose reply was lost.
func (w *worker) sendAgain(c fetchCall) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.lost.again = append(w.lost.again, c)
}

// toSendAgain returns a call to send again, if any, and whether to recover
// the tasks of a lost blocking read's entries, clearing both.
func (w *worker) toSendAgain() (c fetchCall, recover bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if n := len(w.lost.again); n > 0 {
		c = w.lost.again[n-1]
		w.lost.again = w.lost.again[:n-1]
		return c, false
	}
	recover, w.lost.recover = w.lost.recover, false
	return nil, recover
}

// claimSlot returns a slot for a read or own call (rdb.NewCallIn), held
// until the call ran with its reply read: Redis keeps what such a call took
// per slot, for the call to be sent again after its reply was lost, and a
// call of the same slot would replace it. A worker's calls under way or
// waiting to be sent again are at most one per fetcher (a fetcher sends a
// call again before it makes a new one), so slots 0 to fetchers-1 serve.
func (w *worker) claimSlot() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	slot := bits.TrailingZeros64(^w.slots)
	w.slots |= 1 << slot
	return slot
}

func (w *worker) freeSlot(slot int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.slots &^= 1 << slot
}

// memoCall returns a read or own call (fetch.lua keeps what it took, for
// it to be sent again) of a slot of its own, run by send with the call's
// ID. Once the call ran with its reply read, or was refused (it took
// nothing), its slot is freed and done, if any, is called.
func (w *worker) memoCall(done func(), send func(ctx context.Context, call string, n int, quota []int) ([]rdb.Fetched, error)) fetchCall {
	slot := w.claimSlot()
	call := rdb.NewCallIn(slot)
	var once sync.Once
	return func(ctx context.Context, n int, quota []int) ([]rdb.Fetched, error) {
		got, err := send(ctx, call, n, quota)
		if !lostReply(err) {
			once.Do(func() {
				w.freeSlot(slot)
				if done != nil {
					done()
				}
			})
		}
		return got, err
	}
}

// readCall returns a read call (fetch.lua's mode "read") of the slots free
// when it is sent (n, quota); sent again with none, it hands out only what
// its first run took.
func (w *worker) readCall() fetchCall {
	q := w.q
	return w.memoCall(nil, func(ctx context.Context, call string, n int, quota []int) ([]rdb.Fetched, error) {
		if n <= 0 {
			// only what the first run took, if it ran: nothing new
			n, quota = 0, make([]int, len(q.set.levels))
		}
		return rdb.FetchTasks(ctx, q.rdb, q.keys, q.worker, q.set.limits(), call, quota, n)
	})
}

// ownCall returns a recovery call (fetch.lua's mode "own"), made in an own
// section (enterOwn). Sent again after a lost reply, the call hands out the
// tasks its first run took: they are active with this worker now, so no
// other recovery would. The recovery stays under way until it ran (no
// given section opens meanwhile, as while it runs).
func (w *worker) ownCall() fetchCall {
	q := w.q
	return w.memoCall(w.leaveOwn, func(ctx context.Context, call string, n int, _ []int) ([]rdb.Fetched, error) {
		return rdb.FetchOwn(ctx, q.rdb, q.keys, q.worker, q.set.limits(), call, len(q.set.levels), max(n, 0))
	})
}

// givenCall returns the given call (fetch.lua's mode "given") of the
// entries a blocking read gave, made in a given section (enterGiven). The
// section stays open until the call ran: sent again after a lost reply,
// by whichever fetcher, it is still these entries' call.
func (w *worker) givenCall(entries []rdb.Entry) fetchCall {
	q := w.q
	var once sync.Once
	return func(ctx context.Context, _ int, _ []int) ([]rdb.Fetched, error) {
		got, err := rdb.FetchGiven(ctx, q.rdb, q.keys, q.worker, q.set.limits(), entries)
		if heldBack(err) || err == nil && len(got) < len(entries) && w.rated() {
			// Paused since the read, or over the queue's rate (its
			// program's, or one set live): entries stay pending here, taken
			// first by the next call that may take them. So too when this
			// is the call sent again after its reply was lost.
			w.setRecover()
		}
		if !lostReply(err) {
			once.Do(w.leaveGiven)
		}
		return got, err
	}
}

func (w *worker) setRecover() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.lost.recover = true
}

// enterGiven opens a given section (see worker.givens), once no recovery
// is under way or waiting; false when ctx ended first.
func (w *worker) enterGiven(ctx context.Context) bool {
	w.mu.Lock()
	for w.owns > 0 {
		if !w.waitGate(ctx) {
			return false
		}
	}
	w.givens++
	w.mu.Unlock()
	return true
}

// leaveGiven closes a given section.
func (w *worker) leaveGiven() {
	w.mu.Lock()
	w.givens--
	w.openGate()
	w.mu.Unlock()
}

// enterOwn starts a recovery once no given section is open, keeping new
// ones from opening meanwhile; false when ctx ended first.
//
// A given section is open while the worker's other fetcher waits in a
// blocking read, which, idle, lasts until an entry comes (the App's reader
// reads again while none does): the recovery ends that wait, as it would
// otherwise wait for the next enqueue, or for the entries it is for to be
// reclaimed after the visibility timeout. What the read gave, if anything,
// goes to its given call first; a read not begun yet is not made
// (blockingRead).
func (w *worker) enterOwn(ctx context.Context) bool {
	w.mu.Lock()
	w.owns++
	for w.givens > 0 {
		if w.endRead != nil {
			w.endRead()
		}
		if !w.waitGate(ctx) {
			w.mu.Lock()
			w.owns--
			w.openGate()
			w.mu.Unlock()
			return false
		}
	}
	w.mu.Unlock()
	return true
}

// leaveOwn ends a recovery.
func (w *worker) leaveOwn() {
	w.mu.Lock()
	w.owns--
	w.openGate()
	w.mu.Unlock()
}

// waitGate waits, with w.mu held, for a count to fall: it returns with
// w.mu held again, or false with it released when ctx ended.
func (w *worker) waitGate(ctx context.Context) bool {
	gate := w.gate
	w.mu.Unlock()
	select {
	case <-ctx.Done():
		return false
	case <-gate:
	}
	w.mu.Lock()
	return true
}

// openGate wakes those waiting for a count to fall; w.mu is held.
func (w *worker) openGate() {
	close(w.gate)
	w.gate = make(chan struct{})
}

// rated reports whether a rate limit over the queue applies (its program's,
// or one set live as last read), which may leave entries a blocking read
// gave pending with this worker.
func (w *worker) rated() bool { return w.q.set.qrate.N > 0 || w.liveRate.Load() || w.global.Load() }

// heldBack reports whether err is a fetch's refusal to take tasks (the
// queue paused, over its rate or at its global concurrency): the script ran
// and took nothing.
func heldBack(err error) bool {
	var limited *rdb.RateLimitedError
	return errors.Is(err, rdb.ErrPaused) || errors.Is(err, rdb.ErrGlobalFull) || errors.As(err, &limited)
}
