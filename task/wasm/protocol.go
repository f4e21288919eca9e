package wasm

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/leatdev/leat/task"
)

// request is a task as a lines module reads it: the subprocess protocol's
// request line.
type request struct {
	TaskID  string            `json:"task_id"`
	Payload json.RawMessage   `json:"payload"`
	Attempt int               `json:"attempt"`
	Headers map[string]string `json:"headers,omitempty"`
	// Parents are a flow node's parents (task.Task.Parents), absent for a
	// task of no flow.
	Parents map[string]task.Parent `json:"parents,omitempty"`
}

// message is a line a lines module writes, or the envelope a reactor's
// execute returns (without task_id and status).
type message struct {
	Status   string          `json:"status"`
	TaskID   *string         `json:"task_id"`
	Result   json.RawMessage `json:"result"`
	Error    *string         `json:"error"`
	Retry    *bool           `json:"retry"`
	Progress json.RawMessage `json:"progress"`
	Partial  json.RawMessage `json:"partial"`
	Snooze   *float64        `json:"snooze"` // seconds
}

// maxSnooze bounds a snooze a module asks for.
const maxSnooze = 366 * 24 * time.Hour

// decode reads a message; null stands for absent.
func decode(b []byte) (message, error) {
	var m message
	if err := json.Unmarshal(b, &m); err != nil {
		return m, err
	}
	for _, v := range []*json.RawMessage{&m.Result, &m.Progress, &m.Partial} {
		if bytes.Equal(bytes.TrimSpace(*v), []byte("null")) {
			*v = nil
		}
	}
	return m, nil
}

// outcome is the end of a task that message m says: its result, or its
// error (task.SkipRetry when retry is false, task.Snooze for a snooze).
func outcome(m message) (json.RawMessage, error) {
	switch {
	case m.Error != nil:
		msg := *m.Error
		if msg == "" {
			msg = "module reported an error without a message"
		}
		err := errors.New(msg)
		if m.Retry != nil && !*m.Retry {
			err = task.SkipRetry(err)
		}
		return nil, err
	case m.Snooze != nil:
		if *m.Snooze < 0 || *m.Snooze > maxSnooze.Seconds() {
			return nil, fmt.Errorf("module asked to snooze for %v seconds: want 0 to %.0f", *m.Snooze, maxSnooze.Seconds())
		}
		return nil, task.Snooze(time.Duration(*m.Snooze * float64(time.Second)))
	case m.Result != nil:
		return compact(m.Result), nil
	}
	return json.RawMessage("null"), nil
}

// compact returns v without insignificant spaces.
func compact(v json.RawMessage) json.RawMessage {
	var b bytes.Buffer
	if json.Compact(&b, v) != nil {
		return v
	}
	return b.Bytes()
}
