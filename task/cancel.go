package task

import (
	"context"
	"errors"
	"fmt"

	"github.com/leatdev/leat/internal/rdb"
)

// ErrFinished is returned by Cancel for a task that has finished already,
// and by Requeue for a task that is neither dead nor failed.
var ErrFinished = errors.New("task: not in a state for this")

// Cancel cancels task id and returns its state before: a pending,
// scheduled or retrying task is cancelled at once; an active one has its
// context cancelled (cause ErrCancelled) on its worker and ends as
// cancelled when its handler returns, unless it succeeded first. A
// finished task is left alone (ErrFinished).
func (q *core) Cancel(ctx context.Context, id string) (State, error) {
	state, action, err := rdb.Cancel(ctx, q.rdb, q.keys, id)
	if err != nil {
		return "", fmt.Errorf("task queue %q: cancel: %w", q.name, err)
	}
	switch action {
	case "missing":
		return "", fmt.Errorf("task %q in queue %q: %w", id, q.name, ErrNotFound)
	case "final":
		return State(state), fmt.Errorf("%w: task %q is %s", ErrFinished, id, state)
	case "signal":
		if err := rdb.SignalCancel(ctx, q.rdb, q.ks.TaskCancel(q.name), id); err != nil {
			// The worker's touch loop reads the flag within a second.
			q.log.Warn("publishing a cancellation failed", "task", id, "error", err)
		}
	}
	return State(state), nil
}

// Requeue makes a dead or failed task ready again, with its attempts reset.
func (q *core) Requeue(ctx context.Context, id string) error {
	state, err := rdb.Requeue(ctx, q.rdb, q.keys, id)
	if err != nil {
		return fmt.Errorf("task queue %q: requeue: %w", q.name, err)
	}
	switch State(state) {
	case "":
		return fmt.Errorf("task %q in queue %q: %w", id, q.name, ErrNotFound)
	case Dead, Failed:
		return nil
	}
	return fmt.Errorf("%w: task %q is %s, not dead or failed", ErrFinished, id, state)
}

// RequeueDead requeues every task that is dead when it is called and
// returns how many. A requeued task that dies again meanwhile is not
// requeued twice.
func (q *core) RequeueDead(ctx context.Context) (int, error) {
	key := q.ks.TaskDead(q.name)
	upTo, ok, err := rdb.LastDeath(ctx, q.rdb, key)
	if err != nil || !ok {
		return 0, err
	}
	// Tasks that die from now on have a later time of death.
	n, skipped := 0, 0
	for {
		ids, err := rdb.DeadUpTo(ctx, q.rdb, key, upTo, int64(skipped), 500)
		if err != nil {
			return n, err
		}
		if len(ids) == 0 {
			return n, nil
		}
		for _, id := range ids {
			err := q.Requeue(ctx, id)
			switch {
			case err == nil:
				n++
			case errors.Is(err, ErrFinished), errors.Is(err, ErrNotFound):
				skipped++ // past its dead age: the janitor removes it
			default:
				return n, err
			}
		}
	}
}
