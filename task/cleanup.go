package task

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/leatdev/leat/internal/rdb"
)

// cleanBatch is how many tasks, entries or keys one script call of Drain
// and Clean looks at, at most: each call is short, and the others' calls
// go between them.
const cleanBatch = 500

// ErrQueueRunning is the error of Obliterate while workers run the queue.
var ErrQueueRunning = errors.New("task: workers run the queue")

// liveWorkerWindow is how recently a worker must have beaten (every
// second while it runs) to count as running the queue.
const liveWorkerWindow = 10 * time.Second

// Drain deletes the queue's tasks that wait to run (pending, scheduled,
// retrying), with their status, progress reports and logs, and returns how
// many. Running tasks go on, and ended ones stay for their retention. It
// works in short script calls, so tasks enqueued meanwhile may be deleted
// or not; a task being taken by a worker as the call reaches it runs.
func (q *core) Drain(ctx context.Context) (int, error) {
	n, cursor := 0, ""
	for {
		got, next, err := rdb.Drain(ctx, q.rdb, q.keys, q.ks.TaskUpdatesPrefix(q.name), q.ks.TaskLogsPrefix(q.name),
			len(q.set.levels), cleanBatch, cursor)
		n += got
		if err != nil {
			return n, fmt.Errorf("task queue %q: drain: %w", q.name, err)
		}
		if next == "" {
			return n, nil
		}
		cursor = next
	}
}

// Clean deletes the queue's tasks in state (Succeeded, Failed, Cancelled
// or Dead) that ended at least olderThan ago (by the server's clock), as
// Delete does, and returns how many.
func (q *core) Clean(ctx context.Context, state State, olderThan time.Duration) (int, error) {
	if !state.Final() {
		return 0, fmt.Errorf("task queue %q: clean: state %q has not ended: want succeeded, failed, cancelled or dead", q.name, state)
	}
	if olderThan < 0 {
		return 0, fmt.Errorf("task queue %q: clean: negative age %s", q.name, olderThan)
	}
	now, err := rdb.ServerTime(ctx, q.rdb)
	if err != nil {
		return 0, fmt.Errorf("task queue %q: clean: %w", q.name, err)
	}
	before := now.Add(-olderThan)
	n, offset := 0, 0
	for {
		got, next, err := rdb.Clean(ctx, q.rdb, q.keys, q.ks.TaskUpdatesPrefix(q.name), q.ks.TaskLogsPrefix(q.name),
			string(state), before, offset, cleanBatch)
		n += got
		if err != nil {
			return n, fmt.Errorf("task queue %q: clean: %w", q.name, err)
		}
		if next < 0 {
			return n, nil
		}
		offset = next
	}
}

// Obliterate deletes the whole queue: every task whatever its state, its
// streams, schedules, counts, live settings and registry entry, and returns
// how many keys it deleted. It refuses (ErrQueueRunning) while a worker
// runs the queue (beat within the last 10s), unless force: workers still
// running would go on with a queue whose keys are gone. A program that
// declares the queue records it again when it starts.
func (q *core) Obliterate(ctx context.Context, force bool) (int64, error) {
	if !force {
		n, err := rdb.LiveTaskWorkers(ctx, q.rdb, q.ks.TaskWorkers(q.name), liveWorkerWindow)
		if err != nil {
			return 0, fmt.Errorf("task queue %q: obliterate: %w", q.name, err)
		}
		if n > 0 {
			return 0, fmt.Errorf("%w: %d of its workers beat in the last %s (queue %q): stop them first, or force", ErrQueueRunning, n, liveWorkerWindow, q.name)
		}
	}
	n, err := rdb.Obliterate(ctx, q.rdb, q.ks, q.name, q.ks.Background(rdb.TaskLease(q.name)))
	if err != nil {
		return n, fmt.Errorf("task queue %q: obliterate: %w", q.name, err)
	}
	return n, nil
}
