package task

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"
)

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
	// MaxTasksPerProcess replaces a process once it answered that many
	// tasks (0: no limit), as a refresh_worker line does: for a handler
	// that leaks memory.
	MaxTasksPerProcess int
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
	Started  int  // processes started
	Running  int  // processes alive
	Healthy  bool // the last start succeeded (true before any)
	Replaced int  // processes stopped after a task to be replaced (refresh_worker, MaxTasksPerProcess)
	// Concurrency is the number of tasks at once the handler asked for
	// with a concurrency line (0: none asked); see Exec.Concurrency.
	Concurrency int
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
	once      bool          // RunOnce was called: nothing restarts a process that failed
	changed   chan struct{} // closed and replaced when what Wait waits for may have changed
	replaced  int           // processes stopped to be replaced
	asked     int           // the concurrency a process asked for (0: none)
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
	if cfg.MaxTasksPerProcess < 0 {
		return nil, fmt.Errorf("task exec: max tasks per process %d: want 0 (no limit) or more", cfg.MaxTasksPerProcess)
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
	return ExecStats{Started: e.started, Running: len(e.all), Healthy: e.healthy, Replaced: e.replaced, Concurrency: e.asked}
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
	case !e.healthy && e.lastErr != nil:
		return fmt.Errorf("%w: processes fail and restart after a backoff: %v", ErrExecNotReady, e.lastErr)
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
	res, err := e.run(ctx, !gated, t.ID, t.Payload, t.Attempt, t.Headers, t.Parents, func(kind string, data json.RawMessage) {
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
	e.mu.Lock()
	e.once = true
	e.mu.Unlock()
	return e.run(ctx, false, id, payload, 1, nil, nil, report, nil)
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
