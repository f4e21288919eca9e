package task

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/leatdev/leat/internal/rdb"
	"github.com/leatdev/leat/middleware"
)

// Defaults of a queue's options.
const (
	DefaultConcurrency = 10
	DefaultTimeout     = 30 * time.Minute
	DefaultMaxRetries  = 10
	DefaultRetention   = 24 * time.Hour
	DefaultVisibility  = 30 * time.Second
	DefaultDeadMax     = 10_000
	DefaultDeadAge     = 7 * 24 * time.Hour
	DefaultBackoffMin  = time.Second
	DefaultBackoffMax  = 10 * time.Minute
	DefaultGrace       = 10 * time.Second
)

// Bounds of a queue's and a task's settings: values past them are refused
// (they are mistakes, and a retention of centuries keeps every task's hash
// in Redis for good).
const (
	MaxTimeoutLimit   = 7 * 24 * time.Hour   // Timeout, WithTimeout
	MaxRetriesLimit   = 10_000               // MaxRetries, WithMaxRetries
	MaxRetentionLimit = 365 * 24 * time.Hour // Retention, WithRetention
)

// checkTimeout, checkMaxRetries and checkRetention check a setting against
// its bounds.
func checkTimeout(d time.Duration) error {
	if d <= 0 || d > MaxTimeoutLimit {
		return fmt.Errorf("timeout %s out of range: want more than 0 and at most %s", d, MaxTimeoutLimit)
	}
	return nil
}

func checkMaxRetries(n int) error {
	if n < 0 || n > MaxRetriesLimit {
		return fmt.Errorf("max retries %d out of range 0..%d", n, MaxRetriesLimit)
	}
	return nil
}

func checkRetention(d time.Duration) error {
	if d <= 0 || d > MaxRetentionLimit {
		return fmt.Errorf("retention %s out of range: want more than 0 and at most %s (365 days)", d, MaxRetentionLimit)
	}
	return nil
}

// An Option tweaks the declaration of a queue (Handle, Declare).
type Option interface{ apply(*settings) error }

type optionFunc func(*settings) error

func (f optionFunc) apply(s *settings) error { return f(s) }

// settings are a queue's options with defaults filled in.
type settings struct {
	concurrency int
	concFn      func(configured int) int
	timeout     time.Duration
	maxRetries  int
	backoffMin  time.Duration
	backoffMax  time.Duration
	retention   time.Duration
	visibility  time.Duration
	deadMax     int
	deadAge     time.Duration
	grace       time.Duration
	fetchWhen   fetchGate // FetchWhen
	levels      []Level
	strict      bool
	keyed       bool
	rate        rdb.Rate      // per key
	keyConc     int           // KeyConcurrency (0: 1)
	keyBacklog  int           // MaxKeyBacklog (0: none)
	qrate       rdb.Rate      // over the queue
	uniqueTTL   time.Duration // UniqueFor
	events      int           // Events: the events' length cap (0: not turned on)
	hookTries   int
	hookBackoff time.Duration
	hookSecret  string                      // WebhookSecret: signs deliveries of tasks without their own
	mws         []middleware.TaskMiddleware // Use
	// outcomes is how many outcomes a worker holds for its completer
	// (0: outcomeBuffer); recordWait the first wait before recording a
	// batch of outcomes again (0: recordWait). Tests set them.
	outcomes   int
	recordWait time.Duration
}

func defaultSettings() settings {
	return settings{
		concurrency: DefaultConcurrency, timeout: DefaultTimeout, maxRetries: DefaultMaxRetries,
		backoffMin: DefaultBackoffMin, backoffMax: DefaultBackoffMax, retention: DefaultRetention,
		visibility: DefaultVisibility, deadMax: DefaultDeadMax, deadAge: DefaultDeadAge, grace: DefaultGrace,
		levels: []Level{{Name: DefaultPriority, Weight: 1}}, strict: true,
		hookTries: DefaultWebhookAttempts, hookBackoff: DefaultWebhookBackoff,
	}
}

// DefaultPriority is the one priority level of a queue declared without
// Priorities or Weighted.
const DefaultPriority = "default"

// A Level is a priority level of a queue: a name tasks are enqueued with
// (Priority) and, for weighted queues, its share of the workers' fetches.
type Level struct {
	Name   string
	Weight int
}

// ConcurrencyFunc makes this worker's concurrency for the queue follow fn,
// evaluated about every second with the configured concurrency (Concurrency,
// or what SetConcurrency set) and returning the number of tasks to run at
// once, at least 1: for a handler that knows its own capacity (free memory,
// a GPU, a downstream's rate). It applies to the workers whose program
// registers it; a panic in fn keeps the previous value.
func ConcurrencyFunc(fn func(configured int) int) Option {
	return optionFunc(func(s *settings) error {
		if fn == nil {
			return fmt.Errorf("concurrency function is nil")
		}
		s.concFn = fn
		return nil
	})
}

// Concurrency sets how many tasks of the queue one worker runs at once
// (default 10). Change it while workers run with Queue.SetConcurrency or
// "leat tasks concurrency", and go back to it with Queue.ClearConcurrency
// ("leat tasks concurrency QUEUE default").
func Concurrency(n int) Option {
	return optionFunc(func(s *settings) error {
		if n < 1 {
			return fmt.Errorf("concurrency %d must be at least 1", n)
		}
		s.concurrency = n
		return nil
	})
}

// Timeout sets how long one attempt of a task may run (default 30 minutes,
// at most 7 days): then its context is cancelled and the attempt counts as
// failed. A task's own Timeout (an EnqueueOption) overrides it.
func Timeout(d time.Duration) Option {
	return optionFunc(func(s *settings) error {
		if err := checkTimeout(d); err != nil {
			return err
		}
		s.timeout = d
		return nil
	})
}

// MaxRetries sets how many times a failed task is retried before it is dead
// (default 10, at most 10,000; 0 makes the first failure final).
func MaxRetries(n int) Option {
	return optionFunc(func(s *settings) error {
		if err := checkMaxRetries(n); err != nil {
			return err
		}
		s.maxRetries = n
		return nil
	})
}

// Backoff sets the delays between retries: min doubled at each retry, with
// full jitter in its upper half, up to max (defaults 1s and 10 minutes).
func Backoff(minDelay, maxDelay time.Duration) Option {
	return optionFunc(func(s *settings) error {
		if minDelay <= 0 || maxDelay < minDelay {
			return fmt.Errorf("backoff %s..%s: need 0 < min <= max", minDelay, maxDelay)
		}
		s.backoffMin, s.backoffMax = minDelay, maxDelay
		return nil
	})
}

// Retention sets how long a finished task (succeeded, failed, cancelled),
// with its result or error, is kept for Info and Wait (default 24h, at most
// 365 days).
func Retention(d time.Duration) Option {
	return optionFunc(func(s *settings) error {
		if err := checkRetention(d); err != nil {
			return err
		}
		s.retention = d
		return nil
	})
}

// Visibility sets how long a running task's entry may go without its
// worker's heartbeat before the leader hands the task to another worker
// (default 30s). Workers touch their running tasks every third of it.
func Visibility(d time.Duration) Option {
	return optionFunc(func(s *settings) error {
		if d < 300*time.Millisecond {
			return fmt.Errorf("visibility %s is below 300ms", d)
		}
		s.visibility = d
		return nil
	})
}

// KeepDead bounds the dead tasks kept for inspection and requeue: at most max
// tasks (default 10,000), none older than age (default 7 days).
func KeepDead(maxTasks int, age time.Duration) Option {
	return optionFunc(func(s *settings) error {
		if maxTasks < 1 || age <= 0 {
			return fmt.Errorf("dead bounds %d, %s must be positive", maxTasks, age)
		}
		s.deadMax, s.deadAge = maxTasks, age
		return nil
	})
}

// Grace sets how long a stopping worker lets its running tasks finish
// (default 10s); tasks still running then are handed back to the queue.
func Grace(d time.Duration) Option {
	return optionFunc(func(s *settings) error {
		if d <= 0 {
			return fmt.Errorf("grace %s must be positive", d)
		}
		s.grace = d
		return nil
	})
}

// Priorities gives the queue priority levels, highest first, served in
// strict order: a worker takes a task of a level only when no level above
// has one ready.
func Priorities(names ...string) Option {
	return optionFunc(func(s *settings) error {
		levels := make([]Level, len(names))
		for i, n := range names {
			levels[i] = Level{Name: n, Weight: 1}
		}
		if err := checkLevels(levels); err != nil {
			return err
		}
		s.levels, s.strict = levels, true
		return nil
	})
}

// Weighted gives the queue priority levels served in proportion to their
// weights while all have tasks ready (e.g. 6:3:1), so a low level is never
// starved.
func Weighted(levels ...Level) Option {
	return optionFunc(func(s *settings) error {
		if err := checkLevels(levels); err != nil {
			return err
		}
		for _, l := range levels {
			if l.Weight < 1 {
				return fmt.Errorf("priority %q: weight %d must be at least 1", l.Name, l.Weight)
			}
		}
		s.levels, s.strict = append([]Level(nil), levels...), false
		return nil
	})
}

func checkLevels(levels []Level) error {
	if len(levels) == 0 || len(levels) > 10 {
		return fmt.Errorf("priorities: %d levels, want 1 to 10", len(levels))
	}
	seen := map[string]bool{}
	for _, l := range levels {
		if l.Name == "" || seen[l.Name] {
			return fmt.Errorf("priorities: level names must be non-empty and distinct")
		}
		seen[l.Name] = true
	}
	return nil
}

// Keyed makes the queue keyed: every task has a key (the Key enqueue
// option); tasks of one key run one at a time (KeyConcurrency: up to n),
// in the order they became ready, across all workers, while different keys
// run in parallel and take turns, so a flood of one key does not starve
// the others. A keyed queue has one priority level.
func Keyed() Option {
	return optionFunc(func(s *settings) error {
		s.keyed = true
		return nil
	})
}

// Rate limits the queue to n tasks started per window, over every worker:
// counted in Redis in the step that takes tasks, in fixed windows each
// opened by its first task. A fetch takes at most what is left of the
// window's budget; with none left, the workers wait for the window's end
// without polling. Every worker's program should give the same limit (each
// fetch applies its own worker's). On a keyed queue it adds to KeyRate.
func Rate(n int, window time.Duration) Option {
	return rateOption("rate", n, window, func(s *settings) *rdb.Rate { return &s.qrate })
}

// limits returns the rate limits of a fetch.
func (s *settings) limits() rdb.Limits { return rdb.Limits{Key: s.rate, Queue: s.qrate} }

// KeyRate limits a keyed queue to n tasks of one key started per window,
// counted in Redis and so shared by all workers (fixed windows starting at
// a key's first task). A key over its limit waits out its window without
// holding a worker; other keys go on.
func KeyRate(n int, window time.Duration) Option {
	return rateOption("key rate", n, window, func(s *settings) *rdb.Rate { return &s.rate })
}

// rateOption sets the limit that field points to to n per window, once it
// checked them.
func rateOption(what string, n int, window time.Duration, field func(*settings) *rdb.Rate) Option {
	return optionFunc(func(s *settings) error {
		if n < 1 || window < time.Millisecond {
			return fmt.Errorf("%s %d per %s: need n >= 1 and a window of at least 1ms", what, n, window)
		}
		*field(s) = rdb.Rate{N: n, Window: window}
		return nil
	})
}

// UniqueFor makes the queue's tasks unique by payload for ttl, as if each
// enqueue gave Unique(ttl), unless it gives Unique or UniqueKey itself. The
// setting is recorded in the registry, so enqueues of the CLI and the HTTP
// API follow it.
func UniqueFor(ttl time.Duration) Option {
	return optionFunc(func(s *settings) error {
		if ttl <= 0 {
			return fmt.Errorf("unique TTL %s must be positive", ttl)
		}
		s.uniqueTTL = ttl
		return nil
	})
}

// fetchGate is what FetchWhen takes.
type fetchGate = func(ctx context.Context) error

// FetchWhen makes this worker fetch tasks of the queue only once wait
// returned nil, called before each fetch: wait blocks until the handler can
// run tasks, or ctx ends. It is for a handler that can run no task for a
// while, a subprocess handler with no ready process above all: declare its queue with
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
