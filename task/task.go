package task

import (
	"time"
)

// A Task is one run of a task, as its handler sees it.
type Task[P any] struct {
	// ID identifies the task (generated, or chosen with the ID option).
	ID string
	// Queue is the queue's name.
	Queue string
	// Payload is the decoded payload.
	Payload P
	// Attempt counts the runs of the task, this one included (1 the first
	// time).
	Attempt int
	// MaxRetries is how many retries the task has in all.
	MaxRetries int
	// Key is the task's key in a keyed queue ("" otherwise).
	Key string
	// EnqueuedAt is when the task was created.
	EnqueuedAt time.Time
	// Deadline is when this attempt times out.
	Deadline time.Time
	// Headers are the task's headers, as enqueued (see Headers; nil when
	// none).
	Headers map[string]string
	// Parents are, for a node of a flow (AddNode), what it sees of its
	// parents, by node name: those that succeeded, with their results, and
	// those that failed with the policy ContinueOnFailure, with their
	// errors (nil for a task of no flow).
	Parents map[string]Parent

	rep reporter // where Progress and Partial go (nil: nowhere)
}

// LastAttempt reports whether a failure of this attempt makes the task
// dead.
func (t *Task[P]) LastAttempt() bool { return t.Attempt > t.MaxRetries }
