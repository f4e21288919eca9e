package wasm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"

	"github.com/leatdev/leat/task"
	"github.com/tetratelabs/wazero/sys"
)

// ErrLineTooLong fails a task whose lines module wrote a line over
// MaxLine to its stdout.
var ErrLineTooLong = errors.New("wasm: module wrote a line over the size limit")

// MaxLine bounds a line a lines module writes to its stdout, and the
// envelope a reactor returns: 16 MiB.
const MaxLine = 16 << 20

// call is one attempt of a task on an instance.
type call struct {
	req    request
	report func(kind string, data json.RawMessage) // progress and partial results
	log    *taskLog
	logger *slog.Logger

	once   sync.Once
	done   chan struct{} // closed at the answer
	result json.RawMessage
	err    error
}

func newCall(req request, report func(string, json.RawMessage), sink func([]string), logger *slog.Logger) *call {
	if len(req.Payload) == 0 {
		req.Payload = json.RawMessage("null")
	}
	if report == nil {
		report = func(string, json.RawMessage) {}
	}
	return &call{req: req, report: report, log: newTaskLog(sink), logger: logger, done: make(chan struct{})}
}

// answer ends the call with its outcome, once.
func (c *call) answer(res json.RawMessage, err error) {
	c.once.Do(func() {
		c.result, c.err = res, err
		close(c.done)
	})
}

// answered reports whether the call has its outcome.
func (c *call) answered() bool {
	select {
	case <-c.done:
		return true
	default:
		return false
	}
}

// outputLine records a line the module wrote to stderr (or a reactor to
// stdout) in the task's log.
func (c *call) outputLine(line []byte, _ bool) {
	c.logger.Debug("wasm handler: "+string(line), "task", c.req.TaskID)
	c.log.add(string(line))
}

// protocolLine handles a line a lines module wrote to its stdout.
func (c *call) protocolLine(line []byte, tooLong bool) {
	if tooLong {
		c.answer(nil, task.SkipRetry(fmt.Errorf("%w (%d bytes) while running task %s", ErrLineTooLong, MaxLine, c.req.TaskID)))
		return
	}
	if len(strings.TrimSpace(string(line))) == 0 || c.answered() {
		return
	}
	m, err := decode(line)
	if err != nil {
		// Not the protocol: a print left in the handler. Kept in its log.
		c.outputLine(line, false)
		return
	}
	if m.Status == "ready" {
		return
	}
	if m.TaskID == nil || *m.TaskID != c.req.TaskID {
		c.logger.Warn("wasm handler wrote a line for a task it is not running: ignored", "task", c.req.TaskID, "line", cut(string(line), tailLine))
		return
	}
	switch {
	case m.Progress != nil:
		c.report(task.KindProgress, compact(m.Progress))
	case m.Partial != nil:
		c.report(task.KindPartial, compact(m.Partial))
	default:
		c.answer(outcome(m))
	}
}

// failure returns the error of an attempt whose module trapped, exited or
// was stopped (err from wazero).
func (c *call) failure(ctx context.Context, what string, err error) error {
	if ctx.Err() != nil {
		// Past its timeout, cancelled or handed back: the module was
		// closed in the middle of its work.
		return context.Cause(ctx)
	}
	var exit *sys.ExitError
	if errors.As(err, &exit) {
		return fmt.Errorf("wasm module exited with code %d %s%s", exit.ExitCode(), what, c.log.lastLines())
	}
	// The trap and the top of the module's stack.
	msg := err.Error()
	if lines := strings.Split(msg, "\n"); len(lines) > 8 {
		msg = strings.Join(lines[:8], "\n") + "\n\t…"
	}
	msg = cut(msg, 2048)
	return fmt.Errorf("wasm module trapped %s: %s%s", what, msg, c.log.lastLines())
}
