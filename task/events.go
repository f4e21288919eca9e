// Queue events: the stream of every state change of a queue's tasks, turned
// on per queue (Events, SetEvents) and followed by any process (Events,
// EventsAfter). See docs/queue-events.md.

package task

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/leatdev/leat/internal/rdb"
)

// DefaultEventsCap is the number of events a queue keeps when Events is
// given 0.
const DefaultEventsCap = 10_000

// MaxEventsCap is the largest length cap of a queue's events.
const MaxEventsCap = 10_000_000

// EventErrorMax is the most bytes of a task's error an event carries
// (EVENT_ERR in internal/rdb/task_common.lua).
const EventErrorMax = 256

// Event states that are not states of a task: its hash was removed.
const (
	// EventDeleted: the task was deleted (Delete, DeleteDead, Drain, Clean).
	EventDeleted State = "deleted"
	// EventExpired: the task's retention (or its dead age) ended, or the dead
	// set was over its bound, and the janitor removed it.
	EventExpired State = "expired"
)

// A QueueEvent is one state change of a task of a queue, read from the
// queue's events stream (Events). It never holds the task's payload or
// result.
type QueueEvent struct {
	// ID is the event's ID in the stream ("1700000000000-0"): give it to
	// Events to resume after it.
	ID string `json:"id"`
	// Time is when the change happened (Redis's clock), to the millisecond.
	Time time.Time `json:"time"`
	// Task is the task's ID.
	Task string `json:"task"`
	// State is the task's new state, or EventDeleted, EventExpired.
	State State `json:"state"`
	// Prev is the state it left, "" when the task was created. Pending
	// after Scheduled or Retrying is a promotion, Scheduled after Active a
	// snooze, Pending after Active a task handed back or reclaimed from a
	// lost worker, Pending after Dead or Failed a requeue.
	Prev State `json:"prev,omitempty"`
	// Attempt is the task's attempt: the one that started (Active), or the
	// last one that ran; 0 before any.
	Attempt int `json:"attempt"`
	// Error is the start of the task's error (at most EventErrorMax bytes)
	// when the change records one: Retrying, Dead, Failed, Cancelled.
	Error string `json:"error,omitempty"`
}

// Events records every state change of the queue's tasks in one Redis
// stream that any process can follow (Queue.Events, `leat tasks watch`, the
// HTTP API), keeping about maxLen of the latest (0: DefaultEventsCap). The
// queue's workers turn the events on when they start; SetEvents turns them
// on or off live, for every process. Events cost a stream entry per change
// in the scripts that make it: they are off unless turned on.
func Events(maxLen int) Option {
	return optionFunc(func(s *settings) error {
		n, err := eventsCap(maxLen)
		if err != nil {
			return err
		}
		s.events = n
		return nil
	})
}

func eventsCap(maxLen int) (int, error) {
	if maxLen == 0 {
		return DefaultEventsCap, nil
	}
	if maxLen < 0 || maxLen > MaxEventsCap {
		return 0, fmt.Errorf("events: cap %d out of range 1..%d (0: %d)", maxLen, MaxEventsCap, DefaultEventsCap)
	}
	return maxLen, nil
}

// SetEvents turns the queue's events on, keeping about maxLen of the
// latest (0: DefaultEventsCap), or off with maxLen < 0. It applies at once
// to every process: the next script that moves a task reads it. Turning
// events off keeps the history (bounded) for followers to read.
func (q *core) SetEvents(ctx context.Context, maxLen int) error {
	if maxLen < 0 {
		return rdb.SetEvents(ctx, q.rdb, q.ks.TaskConfig(q.name), 0)
	}
	n, err := eventsCap(maxLen)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrBadSetting, err)
	}
	return rdb.SetEvents(ctx, q.rdb, q.ks.TaskConfig(q.name), int64(n))
}

// EventsCap returns the length cap of the queue's events, 0 when they are
// off.
func (q *core) EventsCap(ctx context.Context) (int, error) {
	n, err := rdb.EventsCap(ctx, q.rdb, q.ks.TaskConfig(q.name))
	return int(n), err
}

// ErrBadEventID is returned for a position that is neither "$", "0" nor an
// event ID.
var ErrBadEventID = errors.New("task: bad event position")

var eventIDPattern = regexp.MustCompile(`^[0-9]{1,20}(-[0-9]{1,20})?$`)

// CheckEventPosition checks a position to read a queue's events from: "$"
// (new events only), "0" (the whole history) or an event's ID (the events
// after it).
func CheckEventPosition(since string) error {
	if since == "$" || eventIDPattern.MatchString(since) {
		return nil
	}
	return fmt.Errorf("%w %q: want \"$\" (new events), \"0\" (the whole history) or an event ID such as 1700000000000-0", ErrBadEventID, clipText(since, 64))
}

func clipText(s string, n int) string {
	if len(s) > n {
		return s[:n] + "..."
	}
	return s
}

// eventsPage is how many events a read takes at most.
const eventsPage = 256

// Events follows the queue's events after position since: "$" for new ones
// only (those after the newest when the iteration starts: to miss none
// from a given moment on, take LastEventID then and pass it), "0" for the
// whole history kept, or an event's ID to resume after it
// without a gap (as long as the history still holds the next one). It
// yields each event in order and waits for new ones (blocking reads) until
// ctx ends, when it yields ctx's error, or the loop stops; a failed read is
// yielded and ends it. Events are there only while the queue's events are
// on (the Events option, SetEvents).
func (q *core) Events(ctx context.Context, since string) iter.Seq2[QueueEvent, error] {
	return func(yield func(QueueEvent, error) bool) {
		if err := CheckEventPosition(since); err != nil {
			yield(QueueEvent{}, err)
			return
		}
		stream := q.ks.TaskEvents(q.name)
		last := since
		if since == "$" {
			id, err := rdb.LastEventID(ctx, q.rdb, stream)
			if err != nil {
				yield(QueueEvent{}, err)
				return
			}
			last = id
		}
		for {
			es, err := rdb.ReadEvents(ctx, q.rdb, stream, last, eventsPage, followBlock)
			if err != nil {
				if ctx.Err() != nil {
					err = ctx.Err()
				}
				yield(QueueEvent{}, err)
				return
			}
			for _, e := range es {
				last = e.ID
				if !yield(queueEvent(e), nil) {
					return
				}
			}
			if ctx.Err() != nil {
				yield(QueueEvent{}, ctx.Err())
				return
			}
		}
	}
}

// EventsAfter returns up to n (1 to 1000) of the queue's events after
// position after ("0": from the oldest kept; "$" returns none), without
// waiting: a page of the history, in order.
func (q *core) EventsAfter(ctx context.Context, after string, n int) ([]QueueEvent, error) {
	if err := CheckEventPosition(after); err != nil {
		return nil, err
	}
	if n < 1 || n > 1000 {
		return nil, fmt.Errorf("events: page of %d out of range 1..1000", n)
	}
	if after == "$" {
		return nil, nil
	}
	es, err := rdb.ReadEvents(ctx, q.rdb, q.ks.TaskEvents(q.name), after, int64(n), -1)
	if err != nil {
		return nil, err
	}
	out := make([]QueueEvent, len(es))
	for i, e := range es {
		out[i] = queueEvent(e)
	}
	return out, nil
}

// LastEventID returns the ID of the queue's newest event, "0-0" when it has
// none: the position after which new events come.
func (q *core) LastEventID(ctx context.Context) (string, error) {
	return rdb.LastEventID(ctx, q.rdb, q.ks.TaskEvents(q.name))
}

func queueEvent(e rdb.Event) QueueEvent {
	ev := QueueEvent{ID: e.ID, Task: e.Task, State: State(e.State), Prev: State(e.Prev), Error: e.Error}
	ev.Attempt, _ = strconv.Atoi(e.Attempt)
	ms, _, _ := strings.Cut(e.ID, "-")
	if n, err := strconv.ParseInt(ms, 10, 64); err == nil {
		ev.Time = time.UnixMilli(n).UTC()
	}
	return ev
}
