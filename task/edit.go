package task

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/leatdev/leat/internal/rdb"
)

// ErrKeyedInLine is the error of Reschedule and SetPriority for a pending
// task of a keyed queue: it waits in its key's line, which keeps the key's
// order, and cannot be delayed or moved to another level.
var ErrKeyedInLine = errors.New("task: a keyed task waits in its key's line")

// ErrBadEdit is the error of SetPayload and SetPriority for a payload the
// queue refuses or a level it does not have: nothing was changed.
var ErrBadEdit = errors.New("task: bad edit")

// Edits of a task that waits to run (pending, scheduled or retrying). Each
// is one script call, atomic with respect to a worker taking the task: it
// applies before the task is taken, or fails with ErrFinished because the
// task runs or has ended. A missing task is ErrNotFound.

// RunNow makes a scheduled or retrying task ready now (a pending one stays
// as it is), as if it were due: the attempts are unchanged.
func (q *core) RunNow(ctx context.Context, id string) error {
	return q.edit(ctx, id, rdb.EditNow, time.Time{}, 0, nil)
}

// Reschedule makes the task due at at: a pending task leaves the ready
// tasks until then, a scheduled or retrying one moves; at in the past is
// RunNow.
func (q *core) Reschedule(ctx context.Context, id string, at time.Time) error {
	return q.edit(ctx, id, rdb.EditAt, at, 0, nil)
}

// SetPriority moves the task to the named priority level of the queue: a
// pending task goes to the back of that level's ready tasks.
func (q *core) SetPriority(ctx context.Context, id, level string) error {
	l, ok := q.level(level)
	if !ok || level == "" {
		return fmt.Errorf("%w: task %q in queue %q: %w", ErrBadEdit, id, q.name, q.unknownLevel(level))
	}
	return q.edit(ctx, id, rdb.EditLevel, time.Time{}, l, nil)
}

// SetPayload replaces the payload of a task that waits to run; its next
// attempt gets p. p is encoded and checked as Enqueue's are.
func (q *Queue[P, R]) SetPayload(ctx context.Context, id string, p P) error {
	b, err := encodePayload(p)
	if err == nil && q.check != nil {
		err = q.check(b)
	}
	if err != nil {
		return fmt.Errorf("%w: task %q in queue %q: payload: %w", ErrBadEdit, id, q.name, err)
	}
	return q.edit(ctx, id, rdb.EditPayload, time.Time{}, 0, b)
}

func (q *core) edit(ctx context.Context, id, what string, at time.Time, level int, payload []byte) error {
	st, outcome, err := rdb.EditTask(ctx, q.rdb, q.keys, id, what, at, level, payload)
	if err != nil {
		return fmt.Errorf("task queue %q: edit: %w", q.name, err)
	}
	switch outcome {
	case rdb.EditOK:
		return nil
	case rdb.EditMissing:
		return fmt.Errorf("task %q in queue %q: %w", id, q.name, ErrNotFound)
	case rdb.EditKeyed:
		return fmt.Errorf("task %q in queue %q: %w: it cannot be delayed or moved to another level while pending", id, q.name, ErrKeyedInLine)
	}
	return fmt.Errorf("%w: task %q is %s: only a task that waits to run (pending, scheduled, retrying) can be changed", ErrFinished, id, st)
}
