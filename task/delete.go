package task

import (
	"context"
	"fmt"

	"github.com/leatdev/leat/internal/rdb"
)

// Delete removes a task that has ended (succeeded, failed, cancelled or
// dead) now, instead of at the end of its retention or dead age: its
// status, result and error, its progress reports, partial results and log,
// and a webhook delivery still due. It returns the state the task was in. A
// task that has not ended (pending, scheduled, active, retrying) is left
// alone (ErrFinished: cancel it first); a missing one is ErrNotFound.
func (q *core) Delete(ctx context.Context, id string) (State, error) {
	st, err := rdb.Delete(ctx, q.rdb, q.keys, q.ks.TaskUpdatesPrefix(q.name), q.ks.TaskLogsPrefix(q.name), id)
	if err != nil {
		return "", fmt.Errorf("task queue %q: delete: %w", q.name, err)
	}
	switch State(st) {
	case "":
		return "", fmt.Errorf("task %q in queue %q: %w", id, q.name, ErrNotFound)
	case Succeeded, Failed, Cancelled, Dead:
		return State(st), nil
	}
	return State(st), fmt.Errorf("%w: task %q is %s, not ended: cancel it first", ErrFinished, id, st)
}

// DeleteDead deletes every dead task of the queue, as Delete does, and
// returns how many; deleteBatch per script call.
func (q *core) DeleteDead(ctx context.Context) (int, error) {
	n := 0
	for {
		got, more, err := rdb.DeleteDead(ctx, q.rdb, q.keys, q.ks.TaskUpdatesPrefix(q.name), q.ks.TaskLogsPrefix(q.name), deleteBatch)
		n += got
		if err != nil {
			return n, fmt.Errorf("task queue %q: delete dead tasks: %w", q.name, err)
		}
		if !more {
			return n, nil
		}
	}
}

// deleteBatch is how many dead tasks one call of DeleteDead's script
// deletes at most.
const deleteBatch = 500
