// Replacing and trimming handler processes: a process that asked for it
// (refresh_worker) or answered Config.MaxTasksPerProcess tasks is
// stopped after its task, and the concurrency a process asks for bounds the
// worker's tasks at once through Handler.Concurrency.

package subprocess

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"strconv"
	"time"
)

// stopGrace is how long a process stopped on purpose (replaced, or surplus
// to the concurrency) may take to exit once its stdin is closed, before it
// is killed.
const stopGrace = 5 * time.Second

// replacing reports whether c, which answered a task, is to be replaced:
// it asked for it, or it reached MaxTasksPerProcess.
func (e *Handler) replacing(c *child, asked bool) bool {
	c.tasks++
	return asked || e.cfg.MaxTasksPerProcess > 0 && c.tasks >= e.cfg.MaxTasksPerProcess
}

// replace stops c, whose task (id) ended, instead of returning it to the
// idle processes: its stdin is closed and it has stopGrace to exit (then it
// is killed, as it is when ctx ends). The task's slot takes no other task
// meanwhile, so a process never outlives its slot: the next task runs on a
// process started for it (acquire).
func (e *Handler) replace(ctx context.Context, c *child, id string, asked bool) {
	e.mu.Lock()
	e.fails = 0
	e.replaced++
	e.mu.Unlock()
	reason := "max tasks per process"
	if asked {
		reason = "refresh_worker"
	}
	e.log.Info("replacing a task handler process after its task", "pid", c.pid, "task", id, "reason", reason, "tasks", c.tasks)
	e.stopWait(ctx, c)
}

// stopWait closes c's stdin, waits for it to exit (stopGrace at most, or
// until ctx ends) and kills it if it did not.
func (e *Handler) stopWait(ctx context.Context, c *child) {
	c.stopping.Store(true)
	_ = c.stdin.Close()
	t := time.NewTimer(stopGrace)
	defer t.Stop()
	select {
	case <-c.exited:
		return
	case <-t.C:
		e.log.Warn("a task handler process did not exit within the grace once its stdin was closed: killed", "pid", c.pid, "grace", stopGrace)
	case <-ctx.Done():
	}
	c.kill()
	<-c.exited
}

// refresh reports whether m asks for its process to be replaced: its
// refresh_worker is true. Another value than a boolean is logged and taken
// as false: the line's outcome still counts.
func (m *message) refresh(log *slog.Logger) bool {
	switch v := string(bytes.TrimSpace(m.Refresh)); v {
	case "", "false":
		return false
	case "true":
		return true
	default:
		log.Warn("handler process wrote a refresh_worker that is not a boolean: the process is kept", "refresh_worker", clip(m.Refresh), "task", m.TaskID)
		return false
	}
}

// ask notes the concurrency a process asked for (raw: the line's
// concurrency field, nil when absent). A value that is not an integer of
// at least 1 is ignored, and logged.
func (e *Handler) ask(log *slog.Logger, raw json.RawMessage) {
	if raw == nil {
		return
	}
	n, err := strconv.Atoi(string(bytes.TrimSpace(raw)))
	if err != nil || n < 1 {
		log.Warn("handler process asked for a concurrency that is not an integer of at least 1: ignored", "concurrency", clip(raw))
		return
	}
	e.mu.Lock()
	prev := e.asked
	e.asked = n
	e.mu.Unlock()
	if n != prev {
		log.Info("handler process asked for a concurrency", "concurrency", n)
	}
}

// Concurrency is a ConcurrencyFunc for the queue e handles: it returns the
// concurrency a handler process asked for with a {"concurrency": N} line,
// bounded by configured (the queue's concurrency, or the one set live),
// or configured while none asked. The last line of any of e's processes
// wins. It also stops idle processes beyond that number, which would
// otherwise stay idle: declare the queue with
// ConcurrencyFunc(e.Concurrency) for the handler to set it.
func (e *Handler) Concurrency(configured int) int {
	e.mu.Lock()
	n := configured
	if e.asked > 0 {
		n = min(e.asked, configured)
	}
	n = max(n, 1)
	alive := 0
	for c := range e.all {
		if !c.stopping.Load() {
			alive++
		}
	}
	var surplus []*child
	for alive > n && len(e.idle) > 0 && !e.closed {
		c := e.idle[0] // the least recently used
		e.idle = e.idle[1:]
		c.stopping.Store(true)
		surplus = append(surplus, c)
		alive--
	}
	e.mu.Unlock()
	for _, c := range surplus {
		e.log.Info("stopping an idle task handler process beyond the concurrency", "pid", c.pid, "concurrency", n)
		go e.stopWait(context.Background(), c)
	}
	return n
}
