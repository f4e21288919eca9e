package task

// LogLines appends lines to the task's log in one Redis call, like as
// many calls of Log; the last LogCap are kept. Without Redis (a local run)
// it does nothing.
func (t *Task[P]) LogLines(lines []string) { t.logLines(lines) }
