package subprocess

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/leatdev/leat/task"
)

// Defaults of a Config.
const (
	DefaultStartTimeout = 30 * time.Second
	DefaultBackoffMin   = 100 * time.Millisecond
	DefaultBackoffMax   = 30 * time.Second
	DefaultMaxLine      = 16 << 20
)

// ErrLineTooLong fails a task whose handler process wrote a line over
// Config.MaxLine; the process is kept.
var ErrLineTooLong = errors.New("subprocess: handler process wrote a line over the size limit")

// ErrExited fails (retryably) the task of a handler process that exited
// or was killed while running it.
var ErrExited = errors.New("subprocess: handler process exited")

// Config configures a handler that runs tasks in child processes
// (New): see "Subprocess handlers" in the package documentation for the
// protocol.
type Config struct {
	// Command is the program and its arguments (required).
	Command []string
	// Dir is the working directory ("" : the worker's).
	Dir string
	// Env is the processes' environment besides what they inherit from
	// the worker's (EnvAllowed, or all with InheritEnv): an entry
	// NAME=VALUE sets a variable, a bare NAME passes the worker's on when
	// it is set. The worker's LEAT_ variables are never passed on (New
	// refuses a bare LEAT_ name): they hold leat's Redis URL with its
	// password, its API token and its TLS settings.
	Env []string
	// InheritEnv gives the processes the worker's whole environment but
	// its LEAT_ variables, instead of the allowed ones (EnvAllowed).
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
	// longer line fails the task with ErrLineTooLong.
	MaxLine int
	// MaxTasksPerProcess replaces a process once it answered that many
	// tasks (0: no limit), as a refresh_worker line does: for a handler
	// that leaks memory.
	MaxTasksPerProcess int
	// Logger receives the processes' stderr lines (tagged with the task
	// running) and the supervisor's events (default slog.Default()).
	Logger *slog.Logger
}

// Stats are counters of an Handler, for tests and monitoring.
type Stats struct {
	Started  int  // processes started
	Running  int  // processes alive
	Healthy  bool // the last start succeeded (true before any)
	Replaced int  // processes stopped after a task to be replaced (refresh_worker, MaxTasksPerProcess)
	// Concurrency is the number of tasks at once the handler asked for
	// with a concurrency line (0: none asked); see Handler.Concurrency.
	Concurrency int
}

// An Handler runs tasks in supervised child processes, one task at a time
// per process: Handle is a task handler (see HandleLookup and Handle) and
// runs each task on an idle process, starting one when none is idle, so a
// worker runs as many processes as it runs tasks at once.
type Handler struct {
	cfg Config
	log *slog.Logger

	mu        sync.Mutex
	idle      []*child
	all       map[*child]struct{}
	fails     int       // failures in a row
	lastErr   error     // the last failure's, as an *StartError
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

// New returns an Handler for cfg; it starts processes when tasks come.
func New(cfg Config) (*Handler, error) {
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
		cfg.StartTimeout = DefaultStartTimeout
	}
	if cfg.BackoffMin <= 0 {
		cfg.BackoffMin = DefaultBackoffMin
	}
	if cfg.BackoffMax < cfg.BackoffMin {
		cfg.BackoffMax = max(DefaultBackoffMax, cfg.BackoffMin)
	}
	if cfg.MaxLine <= 0 {
		cfg.MaxLine = DefaultMaxLine
	}
	if cfg.MaxTasksPerProcess < 0 {
		return nil, fmt.Errorf("task exec: max tasks per process %d: want 0 (no limit) or more", cfg.MaxTasksPerProcess)
	}
	log := cfg.Logger
	if log == nil {
		log = slog.Default()
	}
	return &Handler{cfg: cfg, log: log, all: map[*child]struct{}{}, healthy: true, changed: make(chan struct{})}, nil
}

// Stats returns the Handler's counters.
func (e *Handler) Stats() Stats {
	e.mu.Lock()
	defer e.mu.Unlock()
	return Stats{Started: e.started, Running: len(e.all), Healthy: e.healthy, Replaced: e.replaced, Concurrency: e.asked}
}

// ErrNotReady is matched by the error of Handler.Ready while no handler
// process is ready.
var ErrNotReady error = notReady{}

type notReady struct{}

func (notReady) Error() string { return "subprocess: no handler process ready" }

// Is makes ErrNotReady match task.ErrHandBack: the worker hands the task
// back without counting its attempt.
func (notReady) Is(target error) bool { return target == task.ErrHandBack }

// Ready returns nil once a handler process said it was ready, while the
// last start succeeded; else an error matching ErrNotReady (none ready
// yet, or processes failing and restarting). It is a readiness check: see
// Warm, and metrics.AllReady.
func (e *Handler) Ready() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	switch {
	case e.closed:
		return fmt.Errorf("%w: closed", ErrNotReady)
	case !e.healthy && e.lastErr != nil:
		return fmt.Errorf("%w: processes fail and restart after a backoff: %v", ErrNotReady, e.lastErr)
	case !e.wasReady:
		return fmt.Errorf("%w yet", ErrNotReady)
	case !e.healthy:
		return fmt.Errorf("%w: processes fail and restart after a backoff", ErrNotReady)
	}
	return nil
}

// Warm starts a process ahead of the first task, restarting it with the
// backoff until it is ready or ctx ends, and keeps it idle for the next
// task: a worker is then ready (see Ready) before it runs any task.
func (e *Handler) Warm(ctx context.Context) error { return e.wait(ctx) }

// Wait returns once the Handler can run a task at once: a process is idle, or
// one became ready and no start failed since. Until then it starts a
// process (one Wait at a time does), restarting it with the backoff, and
// keeps it idle for the next task. It returns an error when ctx ends or
// the Handler is closed. Pass it to the queue with FetchWhen: a worker then
// takes no task while its handler cannot run one, and the tasks stay with
// the queue for the other workers.
func (e *Handler) Wait(ctx context.Context) error {
	e.mu.Lock()
	e.gated = true
	e.mu.Unlock()
	return e.wait(ctx)
}

func (e *Handler) wait(ctx context.Context) error {
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
func (e *Handler) notify() {
	close(e.changed)
	e.changed = make(chan struct{})
}

// Handle runs task t on a child process: it is a handler for a queue of
// JSON payloads and results. When no process is idle and none can be
// started now (a start fails, or the restart backoff runs), it returns an
// error matching ErrNotReady, on which the worker hands the task back
// to the queue, its attempt not counted; that is when the queue is
// declared with FetchWhen(e.Wait), so that the worker takes no task
// meanwhile. Without it the task waits for a process, restarting it with
// the backoff, within its timeout.
func (e *Handler) Handle(ctx context.Context, t *task.Task[json.RawMessage]) (json.RawMessage, error) {
	e.mu.Lock()
	gated := e.gated
	e.mu.Unlock()
	res, err := e.run(ctx, !gated, t.ID, t.Payload, t.Attempt, t.Headers, t.Parents, func(kind string, data json.RawMessage) {
		send := t.Progress
		if kind == task.KindPartial {
			send = t.Partial
		}
		if err := send(data); err != nil {
			e.log.Warn("task update lost", "task", t.ID, "error", err)
		}
	}, t.LogLines)
	var se *StartError
	if errors.As(err, &se) && ctx.Err() == nil {
		return nil, fmt.Errorf("%w: %w", ErrNotReady, err)
	}
	return res, err
}

// RunOnce runs one task with payload on a child process, without Redis (a
// local test of a handler): report receives its progress reports and
// partial results (task.KindProgress, task.KindPartial) as they come. A process that
// does not become ready is not restarted: RunOnce returns its
// *StartError.
func (e *Handler) RunOnce(ctx context.Context, id string, payload json.RawMessage, report func(kind string, data json.RawMessage)) (json.RawMessage, error) {
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
func (e *Handler) Close() error {
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
