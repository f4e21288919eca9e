package subprocess

import (
	"bufio"
	"bytes"
	"io"
	"time"

	"github.com/leatdev/leat/task"
)

// readStderr logs the process's stderr lines, tagged with its task, and
// appends them to the log of the task started last on the process (a line
// read just after its task ended is still its task's).
func (c *child) readStderr(r io.Reader) {
	br := bufio.NewReaderSize(r, 64<<10)
	log := c.e.log.With("pid", c.pid)
	for {
		line, _, err := readLine(br, 64<<10)
		if len(line) > 0 {
			text := string(bytes.TrimRight(line, "\r"))
			c.keepTail(text)
			c.mu.Lock()
			last := c.last
			c.mu.Unlock()
			id := ""
			if last != nil {
				id = last.id
			}
			log.Info("handler: "+text, "task", id) // the task whose log keeps the line
			if last != nil && last.log != nil {
				c.pend(last, text)
			}
		}
		if err != nil {
			return
		}
	}
}

// logEvery is how often a process's stderr lines go to their tasks' logs:
// one Redis call per task with lines per period, however many lines.
const logEvery = 100 * time.Millisecond

// pend queues line for cl's log (writeLogs).
func (c *child) pend(cl *call, line string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(cl.pending) == 0 {
		c.dirty = append(c.dirty, cl)
	}
	cl.pending = append(cl.pending, line)
	if len(cl.pending) >= 2*task.LogCap { // keep the last task.LogCap, amortised
		cl.pending = append(cl.pending[:0], cl.pending[len(cl.pending)-task.LogCap:]...)
	}
}

// writeLogs writes the queued stderr lines to their tasks' logs every
// logEvery, and once more when the stderr reader ended (done).
func (c *child) writeLogs(done <-chan struct{}) {
	t := time.NewTicker(logEvery)
	defer t.Stop()
	for {
		select {
		case <-done:
			c.flushLogs()
			return
		case <-t.C:
			c.flushLogs()
		}
	}
}

// flushLogs writes the queued stderr lines, a call per task.
func (c *child) flushLogs() {
	c.mu.Lock()
	dirty := c.dirty
	c.dirty = nil
	batches := make([][]string, len(dirty))
	for i, cl := range dirty {
		batches[i] = cl.pending[max(0, len(cl.pending)-task.LogCap):]
		cl.pending = nil
	}
	c.mu.Unlock()
	for i, cl := range dirty {
		cl.log(batches[i])
	}
}
