package subprocess

import (
	"bufio"
	"bytes"
	"encoding/json"
	"time"

	"github.com/leatdev/leat/task"
)

// request is a task as written to a process.
type request struct {
	TaskID  string          `json:"task_id"`
	Payload json.RawMessage `json:"payload"`
	Attempt int             `json:"attempt"`
	// Headers are the task's headers (task.Headers), absent when none.
	Headers map[string]string `json:"headers,omitempty"`
	// Parents are a flow node's parents (task.Task.Parents), absent for a task
	// of no flow.
	Parents map[string]task.Parent `json:"parents,omitempty"`
}

// message is a line a process writes.
type message struct {
	Status   string          `json:"status"`
	TaskID   string          `json:"task_id"`
	Result   json.RawMessage `json:"result"`
	Error    *string         `json:"error"`
	Retry    *bool           `json:"retry"`
	Progress json.RawMessage `json:"progress"`
	Partial  json.RawMessage `json:"partial"`
	Snooze   *float64        `json:"snooze"` // seconds
	// Refresh asks for the process to be replaced once its task ended
	// (true; raw, so that another value does not lose the line's outcome).
	Refresh json.RawMessage `json:"refresh_worker"`
	// Concurrency asks for the worker to run that many tasks at once (an
	// integer, 1 to the queue's concurrency): see Handler.Concurrency.
	Concurrency json.RawMessage `json:"concurrency"`

	hasResult bool // a result was given, null included
}

// dropNulls makes the fields given as JSON null absent: null means absent
// in every line of the protocol (the pointer fields decode null as nil).
func (m *message) dropNulls() {
	m.hasResult = m.Result != nil
	for _, v := range []*json.RawMessage{&m.Result, &m.Progress, &m.Partial, &m.Concurrency, &m.Refresh} {
		if bytes.Equal(bytes.TrimSpace(*v), []byte("null")) {
			*v = nil
		}
	}
}

// control reports whether m only sets the concurrency: a line that
// neither updates nor ends a task.
func (m *message) control() bool {
	return m.Concurrency != nil && !m.hasResult && m.Error == nil && m.Snooze == nil && m.Progress == nil && m.Partial == nil
}

// maxSnooze bounds a snooze a process asks for.
const maxSnooze = 366 * 24 * time.Hour

// answer ends a call.
type answer struct {
	result  json.RawMessage
	err     error
	crashed bool // the process died or was killed: it is not reused
	refresh bool // the process asked to be replaced (refresh_worker)
}

// readLine reads a line without its newline; a line of more than limit
// bytes (its newline not counted, ended by a newline or by the end of the
// output) is discarded through its end and reported as tooLong.
func readLine(br *bufio.Reader, limit int) (line []byte, tooLong bool, err error) {
	for {
		frag, e := br.ReadSlice('\n')
		if !tooLong {
			if len(line)+len(bytes.TrimSuffix(frag, []byte("\n"))) > limit {
				tooLong, line = true, nil
			} else {
				line = append(line, frag...)
			}
		}
		if e == bufio.ErrBufferFull {
			continue
		}
		return bytes.TrimSuffix(line, []byte("\n")), tooLong, e
	}
}

// compact returns v without insignificant spaces.
func compact(v json.RawMessage) json.RawMessage {
	var b bytes.Buffer
	if json.Compact(&b, v) != nil {
		return v
	}
	return b.Bytes()
}

// clip shortens a line for a log.
func clip(b []byte) string {
	if len(b) > 200 {
		return string(b[:200]) + "…"
	}
	return string(b)
}
