package subprocess

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/leatdev/leat/task"
)

// call is a task running on a process.
type call struct {
	id     string
	report func(kind string, data json.RawMessage)
	log    func(lines []string) // appends to the task's log, in one Redis call (nil: none)
	// Its stderr lines not yet in its log (the last LogCap: older ones
	// would be trimmed at once), guarded by child.mu.
	pending []string
	done    chan answer // buffered: one answer
}

// child is one handler process.
type child struct {
	e      *Handler
	cmd    *exec.Cmd
	pid    int
	stdin  io.WriteCloser
	ready  chan struct{} // closed at the ready line
	exited chan struct{} // closed once the process is gone and its output read
	tasks  int           // tasks answered, counted by the run that holds it
	// stopping: it is being stopped on purpose (replaced, or surplus to
	// the concurrency), so its end is no failure.
	stopping atomic.Bool

	mu    sync.Mutex
	cur   *call
	last  *call    // the call started last: its task gets the stderr lines read after its end
	tail  []string // its last stderr lines (startTail), for a start failure's error
	dirty []*call  // calls with stderr lines pending (pend)
}

// Bounds of the stderr lines a start failure's error carries: the last
// startTail lines, each cut to startTailLine bytes.
const (
	startTail     = 20
	startTailLine = 512
)

// StartError is the error of a handler process that did not become
// ready: it exited before its ready line, or was killed after the start
// timeout. Its message ends with the process's last stderr lines.
type StartError struct {
	PID    int      // 0: no process started (a restart's backoff runs)
	Reason string   // what happened, with a hint when there is one
	Stderr []string // the last stderr lines (at most 20, each cut to 512 bytes)
}

func (e *StartError) Error() string {
	msg := "handler " + e.Reason
	if e.PID > 0 {
		msg = fmt.Sprintf("process %d %s", e.PID, e.Reason)
	}
	if len(e.Stderr) == 0 {
		return msg + " (it wrote nothing to stderr)"
	}
	return msg + "; its last stderr lines:\n\t" + strings.Join(e.Stderr, "\n\t")
}

// startError returns the error of c's failed start.
func (c *child) startError(reason string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return &StartError{PID: c.pid, Reason: reason, Stderr: slices.Clone(c.tail)}
}

// keepTail keeps line among c's last stderr lines.
func (c *child) keepTail(line string) {
	if len(line) > startTailLine {
		cut := startTailLine
		for cut > 0 && !utf8.RuneStart(line[cut]) {
			cut--
		}
		line = line[:cut] + "…"
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.tail) == startTail {
		c.tail = append(c.tail[:0], c.tail[1:]...)
	}
	c.tail = append(c.tail, line)
}

func (e *Handler) run(ctx context.Context, retry bool, id string, payload json.RawMessage, attempt int, headers map[string]string, parents map[string]task.Parent, report func(string, json.RawMessage), logLines func([]string)) (json.RawMessage, error) {
	if len(payload) == 0 {
		payload = json.RawMessage("null")
	}
	line, err := json.Marshal(request{TaskID: id, Payload: payload, Attempt: attempt, Headers: headers, Parents: parents})
	if err != nil {
		return nil, task.SkipRetry(fmt.Errorf("encode request: %w", err))
	}
	c, err := e.acquire(ctx, retry)
	if err != nil {
		return nil, err
	}
	cl := &call{id: id, report: report, log: logLines, done: make(chan answer, 1)}
	c.mu.Lock()
	c.cur, c.last = cl, cl
	c.mu.Unlock()
	go func() {
		// A process that does not read its stdin blocks this write; it
		// ends when the process is killed.
		if _, err := c.stdin.Write(append(line, '\n')); err != nil {
			c.kill()
		}
	}()
	select {
	case a := <-cl.done:
		switch {
		case a.crashed:
			e.failed(fmt.Errorf("process %d exited while running task %s", c.pid, id))
		case e.replacing(c, a.refresh):
			e.replace(ctx, c, id, a.refresh)
		default:
			e.answered(c)
		}
		return a.result, a.err
	case <-ctx.Done():
		// A task past its timeout, cancelled or handed back: its process
		// is the only way to stop it.
		cause := context.Cause(ctx)
		e.log.Warn("killing a handler process: its task ended", "task", id, "pid", c.pid, "cause", cause)
		c.kill()
		<-c.exited
		return nil, cause
	}
}

// acquire returns an idle process, or starts one. With retry it waits out
// the backoff and restarts until one is ready or ctx ends; else a start
// that fails ends it with the start's error, as does a backoff under way
// (an *StartError, then, of the last start).
func (e *Handler) acquire(ctx context.Context, retry bool) (*child, error) {
	for {
		e.mu.Lock()
		if e.closed {
			e.mu.Unlock()
			return nil, errors.New("task exec: closed")
		}
		if n := len(e.idle); n > 0 {
			c := e.idle[n-1]
			e.idle = e.idle[:n-1]
			e.mu.Unlock()
			select {
			case <-c.exited:
				continue
			default:
				return c, nil
			}
		}
		wait, lastErr := time.Until(e.nextStart), e.lastErr
		e.mu.Unlock()
		if wait > 0 && !retry && lastErr != nil {
			return nil, lastErr
		}
		if wait > 0 {
			sleep(ctx, wait)
			if ctx.Err() != nil {
				return nil, context.Cause(ctx)
			}
		}
		c, err := e.start(ctx)
		if err == nil {
			return c, nil
		}
		if ctx.Err() != nil {
			return nil, context.Cause(ctx)
		}
		e.failed(err)
		if !retry {
			return nil, err
		}
	}
}

// failed notes a process failure: the next start waits a backoff.
func (e *Handler) failed(err error) {
	e.mu.Lock()
	e.fails++
	d := e.cfg.BackoffMin << min(e.fails-1, 30)
	if d <= 0 || d > e.cfg.BackoffMax {
		d = e.cfg.BackoffMax
	}
	e.nextStart = time.Now().Add(d)
	e.healthy = false
	var se *StartError
	if errors.As(err, &se) {
		e.lastErr = se
	} else {
		e.lastErr = &StartError{Reason: "processes restart after a failure: " + err.Error()}
	}
	e.notify()
	fails, closed, once := e.fails, e.closed, e.once
	e.mu.Unlock()
	switch {
	case closed:
	case once:
		// RunOnce returns the failure: nothing starts another process.
		e.log.Error("task handler process failed", "error", err)
	default:
		e.log.Error("task handler process failed: restarting after a backoff", "error", err, "failures", fails, "backoff", d)
	}
}

// answered returns c to the idle processes after a task's answer.
func (e *Handler) answered(c *child) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.fails = 0
	if !e.closed {
		e.idle = append(e.idle, c)
		e.notify()
	}
}

// start starts a process and waits for its ready line.
func (e *Handler) start(ctx context.Context) (*child, error) {
	outR, outW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		outR.Close()
		outW.Close()
		return nil, err
	}
	cmd := exec.Command(e.cfg.Command[0], e.cfg.Command[1:]...)
	cmd.Dir = e.cfg.Dir
	token := fmt.Sprintf("%d.%d.%d", os.Getpid(), time.Now().UnixNano(), treeSeq.Add(1))
	cmd.Env = append(e.env(), treeVar+"="+token)
	cmd.Stdout, cmd.Stderr = outW, errW
	ownGroup(cmd)
	stdin, err := cmd.StdinPipe()
	if err == nil {
		err = cmd.Start()
	}
	outW.Close()
	errW.Close()
	if err != nil {
		outR.Close()
		errR.Close()
		return nil, fmt.Errorf("start %q: %w", e.cfg.Command[0], err)
	}
	c := &child{e: e, cmd: cmd, pid: cmd.Process.Pid, stdin: stdin, ready: make(chan struct{}), exited: make(chan struct{})}
	e.mu.Lock()
	e.started++
	e.all[c] = struct{}{}
	if e.closed {
		killGroup(cmd) // Close ran meanwhile
	}
	e.mu.Unlock()
	e.log.Debug("task handler process started", "pid", c.pid)

	var readers sync.WaitGroup
	readers.Add(3)
	stderrRead := make(chan struct{})
	go func() { defer readers.Done(); c.readStdout(outR) }()
	go func() { defer readers.Done(); defer close(stderrRead); c.readStderr(errR) }()
	go func() { defer readers.Done(); c.writeLogs(stderrRead) }()
	go func() {
		err := cmd.Wait()
		killGroup(cmd)  // its children too
		killTree(token) // and those that left its group
		// Let the readers take what it wrote before it ended.
		done := make(chan struct{})
		go func() { readers.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(time.Second):
			outR.Close()
			errR.Close()
			<-done
		}
		outR.Close()
		errR.Close()
		e.mu.Lock()
		delete(e.all, c)
		closed := e.closed
		e.mu.Unlock()
		c.finish(answer{err: fmt.Errorf("%w: %v", ErrExited, err), crashed: true})
		switch {
		case c.stopping.Load():
			e.log.Debug("task handler process stopped", "pid", c.pid, "status", err)
		case !closed:
			e.log.Warn("task handler process ended", "pid", c.pid, "status", err)
		}
		close(c.exited)
	}()

	t := time.NewTimer(e.cfg.StartTimeout)
	defer t.Stop()
	select {
	case <-c.ready:
		e.mu.Lock()
		e.healthy, e.wasReady = true, true
		e.notify()
		e.mu.Unlock()
		return c, nil
	case <-c.exited:
		return nil, c.startError(fmt.Sprintf("exited before its ready line (%v)", c.cmd.ProcessState))
	case <-t.C:
		c.kill()
		<-c.exited
		return nil, c.startError(fmt.Sprintf("wrote no ready line within %s: killed. A handler must flush "+
			"its stdout after each line (in Python: print(..., flush=True), python3 -u or PYTHONUNBUFFERED=1)", e.cfg.StartTimeout))
	case <-ctx.Done():
		c.kill()
		<-c.exited
		return nil, context.Cause(ctx)
	}
}

func (c *child) kill() { killGroup(c.cmd) }

// current returns the call running on c, if any.
func (c *child) current() *call {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.cur
}

// finish ends the current call with a, once.
func (c *child) finish(a answer) {
	c.mu.Lock()
	cl := c.cur
	c.cur = nil
	c.mu.Unlock()
	if cl != nil {
		cl.done <- a
	}
}

// readStdout reads the process's protocol lines until it ends.
func (c *child) readStdout(r io.Reader) {
	br := bufio.NewReaderSize(r, 64<<10)
	max := c.e.cfg.MaxLine
	log := c.e.log.With("pid", c.pid)
	isReady := false
	for {
		line, tooLong, err := readLine(br, max)
		if tooLong {
			if cl := c.current(); cl != nil {
				log.Error("handler process wrote a line over the limit: failing its task", "task", cl.id, "limit", max)
				c.finish(answer{err: task.SkipRetry(fmt.Errorf("%w (%d bytes) while running task %s", ErrLineTooLong, max, cl.id))})
			} else {
				log.Error("handler process wrote a line over the limit between tasks: ignored", "limit", max)
			}
		} else if len(bytes.TrimSpace(line)) > 0 {
			var m message
			if jerr := json.Unmarshal(line, &m); jerr != nil {
				log.Warn("handler process wrote a line that is not JSON: ignored", "line", clip(line), "task", c.taskID())
			} else if m.dropNulls(); !isReady {
				if m.Status == "ready" {
					c.e.ask(log, m.Concurrency)
					isReady = true
					close(c.ready)
				} else {
					log.Warn("handler process wrote a line before its ready line: ignored", "line", clip(line))
				}
			} else {
				c.e.ask(log, m.Concurrency)
				if !m.control() {
					c.dispatch(log, m, line)
				}
			}
		}
		if err != nil {
			return
		}
	}
}

// dispatch handles a protocol line of a ready process.
func (c *child) dispatch(log *slog.Logger, m message, line []byte) {
	cl := c.current()
	if cl == nil || m.TaskID != cl.id {
		log.Warn("handler process wrote a line for a task it is not running: ignored", "line", clip(line), "task", c.taskID())
		return
	}
	refresh := m.refresh(log)
	switch {
	case m.Progress != nil:
		cl.report(task.KindProgress, compact(m.Progress))
	case m.Partial != nil:
		cl.report(task.KindPartial, compact(m.Partial))
	case m.Error != nil:
		msg := *m.Error
		if msg == "" {
			msg = "handler process reported an error without a message"
		}
		err := errors.New(msg)
		if m.Retry != nil && !*m.Retry {
			err = task.SkipRetry(err)
		}
		c.finish(answer{err: err, refresh: refresh})
	case m.Snooze != nil:
		if *m.Snooze < 0 || *m.Snooze > maxSnooze.Seconds() {
			c.finish(answer{err: fmt.Errorf("handler process asked to snooze for %v seconds: want 0 to %.0f", *m.Snooze, maxSnooze.Seconds()), refresh: refresh})
			return
		}
		c.finish(answer{err: task.Snooze(time.Duration(*m.Snooze * float64(time.Second))), refresh: refresh})
	default:
		res := json.RawMessage("null")
		if m.Result != nil {
			res = compact(m.Result)
		}
		c.finish(answer{result: res, refresh: refresh})
	}
}

func (c *child) taskID() string {
	if cl := c.current(); cl != nil {
		return cl.id
	}
	return ""
}

// sleep waits d or until ctx ends.
func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}
