package task

import (
	"context"
	"fmt"
	"slices"
	"sync"

	"github.com/leatdev/leat/internal/taskrdb"
)

// Concurrent enqueues of a queue share round trips. An enqueue of a few
// tasks (joinMax at most) made while fewer than joinWriters script calls of
// such enqueues are under way goes at once, on its caller's goroutine, as
// it would alone. One made while they are all under way waits, with the
// others that arrive meanwhile, and the first of those calls to end writes
// them all with one script call (enqueueBatch tasks each, pipelined; then
// the next ones, until none waits, on a goroutine of its own). Many
// goroutines enqueueing a task each (HTTP handlers, event processors) then
// cost Redis one call per round instead of one per task, and a lone
// enqueue costs what it did.
//
// Each enqueue gets its own tasks' IDs and errors, as if it had run alone:
// the tasks of a round are independent (a unique key met twice in one makes
// the second a duplicate, as two enqueues one after the other would). A
// round of waiting enqueues runs to its end, whatever their contexts do (a
// failover is retried as for any enqueue, up to enqueueRetryFor). An
// enqueue whose context ends while it waits leaves, unwritten; one whose
// round has begun returns the context's error, its tasks possibly created,
// as an enqueue cut short in flight does.

// joinWriters is how many script calls of joining enqueues may be under
// way at once: while one is, the next goes at once.
const joinWriters = 2

// joinMax is the most tasks an enqueue may have to join others' rounds;
// larger ones (EnqueueMany in bulk) write their own batches.
const joinMax = enqueueBatch

// joined is a queue's enqueues waiting for a round (guarded by mu).
type joined struct {
	mu      sync.Mutex
	pending []*joinedCall
	writers int // calls under way (joinWriters at most); while all are, enqueues wait
}

// joinedCall is one enqueue's share of a round.
type joinedCall struct {
	ctx       context.Context // the caller's: a round's values (tracing) come from its first call
	tasks     []taskrdb.NewTask
	generated bool
	ids       []string
	err       error
	done      chan struct{} // closed when ids and err are set
}

// joinEnqueue writes tasks in the queue's next round and returns their IDs
// (see create).
func (q *core) joinEnqueue(ctx context.Context, tasks []taskrdb.NewTask, generated bool) ([]string, error) {
	j := &q.joined
	j.mu.Lock()
	if j.writers < joinWriters {
		// Nothing waits (enqueues wait only while every writer is busy):
		// go at once, alone, then write what arrived meanwhile.
		j.writers++
		j.mu.Unlock()
		ids, created, err := q.write(ctx, tasks)
		if q.joinMore() {
			go q.joinRounds()
		}
		if err != nil {
			return ids, err
		}
		return q.outcome(tasks, generated, ids, created)
	}
	if err := ctx.Err(); err != nil {
		j.mu.Unlock()
		return nil, fmt.Errorf("task queue %q: enqueue: %w", q.name, err)
	}
	c := &joinedCall{ctx: ctx, tasks: tasks, generated: generated, done: make(chan struct{})}
	j.pending = append(j.pending, c)
	j.mu.Unlock()
	select {
	case <-c.done:
		return c.ids, c.err
	case <-ctx.Done():
	}
	j.mu.Lock()
	if i := slices.Index(j.pending, c); i >= 0 {
		j.pending = slices.Delete(j.pending, i, i+1)
		j.mu.Unlock()
		return nil, fmt.Errorf("task queue %q: enqueue: %w", q.name, ctx.Err())
	}
	j.mu.Unlock()
	select {
	case <-c.done: // answered meanwhile
		return c.ids, c.err
	default:
		return nil, fmt.Errorf("task queue %q: enqueue: %w (the tasks may have been created)", q.name, ctx.Err())
	}
}

// joinMore reports whether enqueues wait for a round, else ends the
// calling writer (under the same lock, so that an enqueue arriving after
// sees one writer less and starts another).
func (q *core) joinMore() bool {
	j := &q.joined
	j.mu.Lock()
	defer j.mu.Unlock()
	if len(j.pending) > 0 {
		return true
	}
	j.writers--
	return false
}

// joinRounds writes the waiting enqueues, a round at a time, until none
// waits.
func (q *core) joinRounds() {
	for {
		q.joinRound()
		if !q.joinMore() {
			return
		}
	}
}

// joinRound writes the tasks of every waiting enqueue, in the order they
// arrived, and answers each.
func (q *core) joinRound() {
	j := &q.joined
	j.mu.Lock()
	calls := j.pending
	j.pending = nil
	j.mu.Unlock()
	if len(calls) == 0 {
		return
	}
	tasks := calls[0].tasks
	if len(calls) > 1 {
		tasks = nil
		for _, c := range calls {
			tasks = append(tasks, c.tasks...)
		}
	}
	ids, created, err := q.write(context.WithoutCancel(calls[0].ctx), tasks)
	off := 0
	for _, c := range calls {
		n := len(c.tasks)
		if off+n <= len(ids) {
			c.ids, c.err = q.outcome(c.tasks, c.generated, ids[off:off+n:off+n], created[off:off+n])
		} else {
			c.ids, c.err = ids[min(off, len(ids)):], err
		}
		off += n
		c.ctx = nil // hold no caller's context past its answer
		close(c.done)
	}
}
