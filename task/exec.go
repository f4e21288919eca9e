package task

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
)

// ExecEnvAllowed are the variables of the worker's environment that its
// handler processes inherit by default (see ExecConfig.Env): those that
// locate programs, libraries, the user, the locale and the temporary
// directory. A name ending in * stands for every name it begins.
var ExecEnvAllowed = []string{
	"PATH", "HOME", "USER", "LOGNAME", "SHELL", "LANG", "LANGUAGE", "LC_*", "TZ", "TMPDIR",
	"PYTHON*", "VIRTUAL_ENV", "CONDA_PREFIX", "CONDA_DEFAULT_ENV", "PYENV_*", "NODE_PATH",
	"LD_LIBRARY_PATH", "SSL_CERT_FILE", "SSL_CERT_DIR", "CUDA_VISIBLE_DEVICES",
}

// envAllowed reports whether the worker's variable name goes to handler
// processes without InheritEnv.
func envAllowed(name string) bool {
	for _, a := range ExecEnvAllowed {
		if p, ok := strings.CutSuffix(a, "*"); ok && strings.HasPrefix(name, p) || name == a {
			return true
		}
	}
	return false
}

// leatEnv reports whether name is one of leat's own variables, never
// passed on to handler processes.
func leatEnv(name string) bool { return strings.HasPrefix(name, "LEAT_") }

// Defaults of an ExecConfig.
const (
	DefaultExecStartTimeout = 30 * time.Second
	DefaultExecBackoffMin   = 100 * time.Millisecond
	DefaultExecBackoffMax   = 30 * time.Second
	DefaultExecMaxLine      = 16 << 20
)

// ErrExecLineTooLong fails a task whose handler process wrote a line over
// ExecConfig.MaxLine; the process is kept.
var ErrExecLineTooLong = errors.New("task: handler process wrote a line over the size limit")

// ErrExecExited fails (retryably) the task of a handler process that exited
// or was killed while running it.
var ErrExecExited = errors.New("task: handler process exited")

// ExecConfig configures a handler that runs tasks in child processes
// (NewExec): see "Subprocess handlers" in the package documentation for the
// protocol.
type ExecConfig struct {
	// Command is the program and its arguments (required).
	Command []string
	// Dir is the working directory ("" : the worker's).
	Dir string
	// Env is the processes' environment besides what they inherit from
	// the worker's (ExecEnvAllowed, or all with InheritEnv): an entry
	// NAME=VALUE sets a variable, a bare NAME passes the worker's on when
	// it is set. The worker's LEAT_ variables are never passed on (NewExec
	// refuses a bare LEAT_ name): they hold leat's Redis URL with its
	// password, its API token and its TLS settings.
	Env []string
	// InheritEnv gives the processes the worker's whole environment but
	// its LEAT_ variables, instead of the allowed ones (ExecEnvAllowed).
	InheritEnv bool
	// StartTimeout bounds the wait for a new process's ready line
	// (default 30s): a process silent for longer is killed and restarted.
	StartTimeout time.Duration
	// BackoffMin and BackoffMax bound the delay before a restart after a
	// process failed (did not become ready, died or was killed): doubled
	// at each failure in a row (defaults 100ms and 30s); a task answered
	// resets it.
	BackoffMin, BackoffMax time.Duration
	// MaxLine bounds a line of the process's output (default 16 MiB): a
	// longer line fails the task with ErrExecLineTooLong.
	MaxLine int
	// Logger receives the processes' stderr lines (tagged with the task
	// running) and the supervisor's events (default slog.Default()).
	Logger *slog.Logger
}

// fetchGate is what FetchWhen takes.
type fetchGate = func(ctx context.Context) error

// FetchWhen makes this worker fetch tasks of the queue only once wait
// returned nil, called before each fetch: wait blocks until the handler can
// run tasks, or ctx ends. It is for a handler that can run no task for a
// while, an Exec with no ready process above all: declare its queue with
// FetchWhen(ex.Wait), so that the tasks stay with the queue for the other
// workers meanwhile. It applies to the workers whose program registers it.
func FetchWhen(wait func(ctx context.Context) error) Option {
	return optionFunc(func(s *settings) error {
		if wait == nil {
			return errors.New("fetch gate is nil")
		}
		s.fetchWhen = wait
		return nil
	})
}

// ExecStats are counters of an Exec, for tests and monitoring.
type ExecStats struct {
	Started int  // processes started
	Running int  // processes alive
	Healthy bool // the last start succeeded (true before any)
}

// An Exec runs tasks in supervised child processes, one task at a time
// per process: Handle is a task handler (see HandleLookup and Handle) and
// runs each task on an idle process, starting one when none is idle, so a
// worker runs as many processes as it runs tasks at once.
type Exec struct {
	cfg ExecConfig
	log *slog.Logger

	mu        sync.Mutex
	idle      []*child
	all       map[*child]struct{}
	fails     int       // failures in a row
	lastErr   error     // the last failure's, as an *ExecStartError
	nextStart time.Time // no start before (backoff)
	started   int
	healthy   bool
	wasReady  bool // a process said ready once
	closed    bool
	warming   bool          // a Wait is starting a process
	gated     bool          // Wait was called: a worker fetches through it (FetchWhen)
	changed   chan struct{} // closed and replaced when what Wait waits for may have changed
}

// NewExec returns an Exec for cfg; it starts processes when tasks come.
func NewExec(cfg ExecConfig) (*Exec, error) {
	if len(cfg.Command) == 0 || cfg.Command[0] == "" {
		return nil, errors.New("task exec: no command")
	}
	for _, v := range cfg.Env {
		name, _, set := strings.Cut(v, "=")
		if name == "" || strings.ContainsAny(name, "\x00") {
			return nil, fmt.Errorf("task exec: environment entry %q: want NAME or NAME=VALUE", v)
		}
		if !set && leatEnv(name) {
			return nil, fmt.Errorf("task exec: environment entry %q: leat's own variables are not passed on to handlers (set a value with NAME=VALUE)", v)
		}
	}
	if cfg.StartTimeout <= 0 {
		cfg.StartTimeout = DefaultExecStartTimeout
	}
	if cfg.BackoffMin <= 0 {
		cfg.BackoffMin = DefaultExecBackoffMin
	}
	if cfg.BackoffMax < cfg.BackoffMin {
		cfg.BackoffMax = max(DefaultExecBackoffMax, cfg.BackoffMin)
	}
	if cfg.MaxLine <= 0 {
		cfg.MaxLine = DefaultExecMaxLine
	}
	log := cfg.Logger
	if log == nil {
		log = slog.Default()
	}
	return &Exec{cfg: cfg, log: log, all: map[*child]struct{}{}, healthy: true, changed: make(chan struct{})}, nil
}

// Stats returns the Exec's counters.
func (e *Exec) Stats() ExecStats {
	e.mu.Lock()
	defer e.mu.Unlock()
	return ExecStats{Started: e.started, Running: len(e.all), Healthy: e.healthy}
}

// ErrExecNotReady is matched by the error of Exec.Ready while no handler
// process is ready.
var ErrExecNotReady = errors.New("task exec: no handler process ready")

// Ready returns nil once a handler process said it was ready, while the
// last start succeeded; else an error matching ErrExecNotReady (none ready
// yet, or processes failing and restarting). It is a readiness check: see
// Warm, and metrics.AllReady.
func (e *Exec) Ready() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	switch {
	case e.closed:
		return fmt.Errorf("%w: closed", ErrExecNotReady)
	case !e.wasReady:
		return fmt.Errorf("%w yet", ErrExecNotReady)
	case !e.healthy:
		return fmt.Errorf("%w: processes fail and restart after a backoff", ErrExecNotReady)
	}
	return nil
}

// Warm starts a process ahead of the first task, restarting it with the
// backoff until it is ready or ctx ends, and keeps it idle for the next
// task: a worker is then ready (see Ready) before it runs any task.
func (e *Exec) Warm(ctx context.Context) error { return e.wait(ctx) }

// Wait returns once the Exec can run a task at once: a process is idle, or
// one became ready and no start failed since. Until then it starts a
// process (one Wait at a time does), restarting it with the backoff, and
// keeps it idle for the next task. It returns an error when ctx ends or
// the Exec is closed. Pass it to the queue with FetchWhen: a worker then
// takes no task while its handler cannot run one, and the tasks stay with
// the queue for the other workers.
func (e *Exec) Wait(ctx context.Context) error {
	e.mu.Lock()
	e.gated = true
	e.mu.Unlock()
	return e.wait(ctx)
}

func (e *Exec) wait(ctx context.Context) error {
	for {
		e.mu.Lock()
		switch {
		case e.closed:
			e.mu.Unlock()
			return errors.New("task exec: closed")
		case len(e.idle) > 0 || e.wasReady && e.healthy:
			e.mu.Unlock()
			return nil
		case !e.warming:
			e.warming = true
			e.mu.Unlock()
			c, err := e.acquire(ctx, true)
			e.mu.Lock()
			e.warming = false
			e.notify()
			e.mu.Unlock()
			if err != nil {
				return err
			}
			e.answered(c)
			return nil
		}
		changed := e.changed
		e.mu.Unlock()
		select {
		case <-ctx.Done():
			return context.Cause(ctx)
		case <-changed:
		}
	}
}

// notify wakes the Waits; e.mu is held.
func (e *Exec) notify() {
	close(e.changed)
	e.changed = make(chan struct{})
}

// Handle runs task t on a child process: it is a handler for a queue of
// JSON payloads and results. When no process is idle and none can be
// started now (a start fails, or the restart backoff runs), it returns an
// error matching ErrExecNotReady, on which the worker hands the task back
// to the queue, its attempt not counted; that is when the queue is
// declared with FetchWhen(e.Wait), so that the worker takes no task
// meanwhile. Without it the task waits for a process, restarting it with
// the backoff, within its timeout.
func (e *Exec) Handle(ctx context.Context, t *Task[json.RawMessage]) (json.RawMessage, error) {
	e.mu.Lock()
	gated := e.gated
	e.mu.Unlock()
	res, err := e.run(ctx, !gated, t.ID, t.Payload, t.Attempt, t.Headers, func(kind string, data json.RawMessage) {
		if err := t.send(kind, data); err != nil {
			e.log.Warn("task update lost", "task", t.ID, "error", err)
		}
	}, t.logLines)
	var se *ExecStartError
	if errors.As(err, &se) && ctx.Err() == nil {
		return nil, fmt.Errorf("%w: %w", ErrExecNotReady, err)
	}
	return res, err
}

// RunOnce runs one task with payload on a child process, without Redis (a
// local test of a handler): report receives its progress reports and
// partial results (KindProgress, KindPartial) as they come. A process that
// does not become ready is not restarted: RunOnce returns its
// *ExecStartError.
func (e *Exec) RunOnce(ctx context.Context, id string, payload json.RawMessage, report func(kind string, data json.RawMessage)) (json.RawMessage, error) {
	if report == nil {
		report = func(string, json.RawMessage) {}
	}
	return e.run(ctx, false, id, payload, 1, nil, report, nil)
}

// Close stops the processes: their stdin is closed, and those still alive
// a second later are killed. Tasks running on them fail.
func (e *Exec) Close() error {
	e.mu.Lock()
	e.closed = true
	all := make([]*child, 0, len(e.all))
	for c := range e.all {
		all = append(all, c)
	}
	e.idle = nil
	e.notify()
	e.mu.Unlock()
	for _, c := range all {
		_ = c.stdin.Close()
	}
	t := time.NewTimer(time.Second)
	defer t.Stop()
	for _, c := range all {
		select {
		case <-c.exited:
		case <-t.C:
		}
		c.kill()
		<-c.exited
	}
	return nil
}

// request is a task as written to a process.
type request struct {
	TaskID  string          `json:"task_id"`
	Payload json.RawMessage `json:"payload"`
	Attempt int             `json:"attempt"`
	// Headers are the task's headers (task.Headers), absent when none.
	Headers map[string]string `json:"headers,omitempty"`
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
}

// dropNulls makes the fields given as JSON null absent: null means absent
// in every line of the protocol (the pointer fields decode null as nil).
func (m *message) dropNulls() {
	for _, v := range []*json.RawMessage{&m.Result, &m.Progress, &m.Partial} {
		if bytes.Equal(bytes.TrimSpace(*v), []byte("null")) {
			*v = nil
		}
	}
}

// maxSnooze bounds a snooze a process asks for.
const maxSnooze = 366 * 24 * time.Hour

// answer ends a call.
type answer struct {
	result  json.RawMessage
	err     error
	crashed bool // the process died or was killed: it is not reused
}

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
	e      *Exec
	cmd    *exec.Cmd
	pid    int
	stdin  io.WriteCloser
	ready  chan struct{} // closed at the ready line
	exited chan struct{} // closed once the process is gone and its output read

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

// ExecStartError is the error of a handler process that did not become
// ready: it exited before its ready line, or was killed after the start
// timeout. Its message ends with the process's last stderr lines.
type ExecStartError struct {
	PID    int      // 0: no process started (a restart's backoff runs)
	Reason string   // what happened, with a hint when there is one
	Stderr []string // the last stderr lines (at most 20, each cut to 512 bytes)
}

func (e *ExecStartError) Error() string {
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
	return &ExecStartError{PID: c.pid, Reason: reason, Stderr: slices.Clone(c.tail)}
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

func (e *Exec) run(ctx context.Context, retry bool, id string, payload json.RawMessage, attempt int, headers map[string]string, report func(string, json.RawMessage), logLines func([]string)) (json.RawMessage, error) {
	if len(payload) == 0 {
		payload = json.RawMessage("null")
	}
	line, err := json.Marshal(request{TaskID: id, Payload: payload, Attempt: attempt, Headers: headers})
	if err != nil {
		return nil, SkipRetry(fmt.Errorf("encode request: %w", err))
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
		if a.crashed {
			e.failed(fmt.Errorf("process %d exited while running task %s", c.pid, id))
		} else {
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
// (an *ExecStartError, then, of the last start).
func (e *Exec) acquire(ctx context.Context, retry bool) (*child, error) {
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
func (e *Exec) failed(err error) {
	e.mu.Lock()
	e.fails++
	d := e.cfg.BackoffMin << min(e.fails-1, 30)
	if d <= 0 || d > e.cfg.BackoffMax {
		d = e.cfg.BackoffMax
	}
	e.nextStart = time.Now().Add(d)
	e.healthy = false
	var se *ExecStartError
	if errors.As(err, &se) {
		e.lastErr = se
	} else {
		e.lastErr = &ExecStartError{Reason: "processes restart after a failure: " + err.Error()}
	}
	e.notify()
	fails, closed := e.fails, e.closed
	e.mu.Unlock()
	if closed {
		return
	}
	e.log.Error("task handler process failed: restarting after a backoff", "error", err, "failures", fails, "backoff", d)
}

// answered returns c to the idle processes after a task's answer.
func (e *Exec) answered(c *child) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.fails = 0
	if !e.closed {
		e.idle = append(e.idle, c)
		e.notify()
	}
}

// treeVar marks the environment of a handler process, inherited by its
// descendants, with a token of its own: killTree finds them by it when the
// process ends, though they left its process group.
const treeVar = "LEAT_EXEC_PROCESS"

// treeSeq numbers the processes of the worker, for their tokens.
var treeSeq atomic.Uint64

// env returns the environment of a process: the worker's allowed
// variables (all but leat's own with InheritEnv), PYTHONUNBUFFERED=1 unless
// the worker sets it (Python's print then writes each line at once, as the
// protocol needs), then cfg.Env.
func (e *Exec) env() []string {
	var env []string
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		if !leatEnv(name) && (e.cfg.InheritEnv || envAllowed(name)) {
			env = append(env, kv)
		}
	}
	if _, ok := os.LookupEnv("PYTHONUNBUFFERED"); !ok {
		env = append(env, "PYTHONUNBUFFERED=1")
	}
	for _, v := range e.cfg.Env {
		if !strings.Contains(v, "=") {
			val, ok := os.LookupEnv(v)
			if !ok {
				continue
			}
			v += "=" + val
		}
		env = append(env, v)
	}
	return env
}

// start starts a process and waits for its ready line.
func (e *Exec) start(ctx context.Context) (*child, error) {
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
		c.finish(answer{err: fmt.Errorf("%w: %v", ErrExecExited, err), crashed: true})
		if !closed {
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
				c.finish(answer{err: SkipRetry(fmt.Errorf("%w (%d bytes) while running task %s", ErrExecLineTooLong, max, cl.id))})
			} else {
				log.Error("handler process wrote a line over the limit between tasks: ignored", "limit", max)
			}
		} else if len(bytes.TrimSpace(line)) > 0 {
			var m message
			if jerr := json.Unmarshal(line, &m); jerr != nil {
				log.Warn("handler process wrote a line that is not JSON: ignored", "line", clip(line), "task", c.taskID())
			} else if m.dropNulls(); !isReady {
				if m.Status == "ready" {
					isReady = true
					close(c.ready)
				} else {
					log.Warn("handler process wrote a line before its ready line: ignored", "line", clip(line))
				}
			} else {
				c.dispatch(log, m, line)
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
	switch {
	case m.Progress != nil:
		cl.report(KindProgress, compact(m.Progress))
	case m.Partial != nil:
		cl.report(KindPartial, compact(m.Partial))
	case m.Error != nil:
		msg := *m.Error
		if msg == "" {
			msg = "handler process reported an error without a message"
		}
		err := errors.New(msg)
		if m.Retry != nil && !*m.Retry {
			err = SkipRetry(err)
		}
		c.finish(answer{err: err})
	case m.Snooze != nil:
		if *m.Snooze < 0 || *m.Snooze > maxSnooze.Seconds() {
			c.finish(answer{err: fmt.Errorf("handler process asked to snooze for %v seconds: want 0 to %.0f", *m.Snooze, maxSnooze.Seconds())})
			return
		}
		c.finish(answer{err: Snooze(time.Duration(*m.Snooze * float64(time.Second)))})
	default:
		res := json.RawMessage("null")
		if m.Result != nil {
			res = compact(m.Result)
		}
		c.finish(answer{result: res})
	}
}

func (c *child) taskID() string {
	if cl := c.current(); cl != nil {
		return cl.id
	}
	return ""
}

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
	if len(cl.pending) >= 2*LogCap { // keep the last LogCap, amortised
		cl.pending = append(cl.pending[:0], cl.pending[len(cl.pending)-LogCap:]...)
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
		batches[i] = cl.pending[max(0, len(cl.pending)-LogCap):]
		cl.pending = nil
	}
	c.mu.Unlock()
	for i, cl := range dirty {
		cl.log(batches[i])
	}
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
