package task

import (
	"fmt"
	"time"
)

// SnoozeError, returned by a handler (see Snooze), ends the attempt without
// failing it: the task is scheduled again After from now, and the attempt
// is not counted.
type SnoozeError struct{ After time.Duration }

func (e *SnoozeError) Error() string { return fmt.Sprintf("task snoozed for %s", e.After) }

// Snooze returns an error that puts the task back, scheduled to run again
// after d (0: as soon as a worker takes it), without counting the attempt
// against its retries and without an error: for a handler that finds its
// work not ready yet (a file still uploading, a rate limit of its own) and
// would otherwise poll. The task is scheduled meanwhile; in a keyed queue
// it keeps its place at the head of its key, so the key's later tasks wait
// for it. A task cancelled while it ran ends cancelled instead. Nothing
// bounds how often a task snoozes: its handler decides when to stop.
func Snooze(d time.Duration) error { return &SnoozeError{After: max(d, 0)} }
