package task

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"sync"
	"time"

	"github.com/leatdev/leat/app"
	"github.com/leatdev/leat/internal/declared"
	"github.com/leatdev/leat/internal/rdb"
	"github.com/leatdev/leat/internal/rounds"
	"github.com/leatdev/leat/internal/topology"
	"github.com/leatdev/leat/middleware"
	"github.com/redis/go-redis/v9"
)

// ErrUnknownQueue is returned by Lookup for a queue no program declared.
var ErrUnknownQueue = errors.New("task: unknown queue")

// A Queue is a declared task queue with payloads of type P and results of
// type R. Enqueue tasks with Enqueue and EnqueueMany; read them with Info,
// Wait, Result and Counts; act on them with Cancel and Requeue.
type Queue[P, R any] struct {
	*core
	handler func(ctx context.Context, t *Task[P]) (R, error)
	chain   middleware.TaskHandler // the handler in its middleware (nil: none)
}

// core is the untyped part of a queue, shared by every Queue[P, R].
type core struct {
	app    *app.App
	name   string
	set    settings
	rdb    redis.UniversalClient
	ks     rdb.KeySpace
	keys   []string   // KEYS of the task scripts
	enq    rdb.Target // what enqueue.lua takes
	log    *slog.Logger
	worker string // this process's worker ID
	cron   []*cronEntry
	hooks  []HookTaskRun

	regOnce sync.Mutex
	reg     bool // the definition is in Redis

	// check refuses payloads the queue's handlers would not decode exactly:
	// set on a queue looked up from the registry (json.RawMessage
	// payloads), from the payload type this program declared it with, else
	// from the schema its declaring program recorded in the registry.
	check declared.PayloadCheck
	// schema is the schema of the payload type a declaration gives (nil: a
	// type that takes any JSON), recorded in the registry with the queue's
	// definition.
	schema []byte

	joined rounds.Group[enqueueWork] // enqueues sharing round trips (join.go)
}

// Definition is what the registry in Redis records about a queue, so tools
// without the app's code (the CLI) can enqueue and inspect. Its fields are
// the queue's options (see Option), defaults filled in.
type Definition struct {
	Name        string        `json:"name"`
	Keyed       bool          `json:"keyed,omitempty"`
	Levels      []Level       `json:"levels"`
	Strict      bool          `json:"strict"`
	Concurrency int           `json:"concurrency"`
	Timeout     time.Duration `json:"timeout"`
	MaxRetries  int           `json:"max_retries"`
	BackoffMin  time.Duration `json:"backoff_min"`
	BackoffMax  time.Duration `json:"backoff_max"`
	Retention   time.Duration `json:"retention"`
	Visibility  time.Duration `json:"visibility"`
	DeadMax     int           `json:"dead_max"`
	DeadAge     time.Duration `json:"dead_age"`
	KeyRate     int           `json:"key_rate,omitempty"`
	KeyWindow   time.Duration `json:"key_window,omitempty"`
	Rate        int           `json:"rate,omitempty"`
	RateWindow  time.Duration `json:"rate_window,omitempty"`
	UniqueTTL   time.Duration `json:"unique_ttl,omitempty"`
	// KeyConcurrency and MaxKeyBacklog are the options of the same names
	// (0: not given).
	KeyConcurrency int `json:"key_concurrency,omitempty"`
	MaxKeyBacklog  int `json:"max_key_backlog,omitempty"`
}

// Declare declares queue name on a for enqueueing and inspection, without
// running it: a program that only enqueues declares its queues this way,
// with the options the workers' program gives Handle. The queue's
// definition is written to the registry in Redis when the app registers
// (app.Register, a worker's start) or the queue first enqueues, so tools
// without the app's code (leat enqueue, the HTTP API) can enqueue as soon
// as a program declaring it runs.
func Declare[P, R any](a *app.App, name string, opts ...Option) (*Queue[P, R], error) {
	q, err := declare[P, R](a, name, opts)
	if err != nil {
		return nil, err
	}
	declared.SetRegistrar(a, "task/"+name, q.registerRetry)
	return q, nil
}

// declare is Declare without the registrar: for a queue looked up from the
// registry, which it must not write back.
func declare[P, R any](a *app.App, name string, opts []Option) (*Queue[P, R], error) {
	c, err := newCore(a, name, opts)
	if err != nil {
		return nil, err
	}
	if check := payloadCheck[P](); check != nil {
		declared.SetTaskPayload(a, name, check)
	}
	if c.schema, err = payloadSchema[P](); err != nil {
		return nil, fmt.Errorf("task queue %q: schema: %w", name, err)
	}
	return &Queue[P, R]{core: c}, nil
}

// Handle declares queue name on a with fn as its handler: every worker of
// the app (app.Run) then runs the queue's tasks, up to its concurrency at a
// time, and one of them, the queue's leader (a lease per queue among the
// workers whose programs handle it), moves its due tasks, fires its cron
// schedules, reclaims the tasks of dead workers and forgets expired ones.
//
// fn's payload arrives decoded from JSON; its result is stored as JSON for
// the queue's retention. Returning an error fails the attempt: the task is
// retried with backoff (see RetryAfter, SkipRetry) until its retries run
// out, then it is dead. A panic is an error. fn must return when ctx ends:
// at the task's timeout, when it is cancelled, or when the worker stops.
func Handle[P, R any](a *app.App, name string, fn func(ctx context.Context, t *Task[P]) (R, error), opts ...Option) (*Queue[P, R], error) {
	if fn == nil {
		return nil, fmt.Errorf("task queue %q: handler is nil", name)
	}
	q, err := Declare[P, R](a, name, opts...)
	if err != nil {
		return nil, err
	}
	q.handler = fn
	q.chain = q.chained()
	if err := a.Attach(&workerService{core: q.core, run: q.run}); err != nil {
		return nil, err
	}
	// The queue's leader-side work runs on one of the workers that handle
	// it (a lease per queue), not on the app's leader, whose program may
	// not handle it (a subprocess worker beside a Go program, say).
	if err := a.Background("task-"+name, q.lead, app.Schedule{LeaderOnly: true, Lease: rdb.TaskLease(name)}); err != nil {
		return nil, err
	}
	// The app's flows are moved on by the workers of their queues, and
	// repaired by one of them (flow_sweep.go).
	if err := registerFlowSweep(a); err != nil {
		return nil, err
	}
	return q, nil
}

// Handled returns the names of the task queues whose tasks a's workers run
// (Handle, HandleLookup), in the order they were declared.
func Handled(a *app.App) []string {
	var names []string
	for _, s := range a.Services() {
		if w, ok := s.(*workerService); ok {
			names = append(names, w.name)
		}
	}
	return names
}

func newCore(a *app.App, name string, opts []Option) (*core, error) {
	if err := rdb.CheckName("task queue", name); err != nil {
		return nil, err
	}
	s, err := applyOptions(opts)
	if err != nil {
		return nil, fmt.Errorf("task queue %q: %w", name, err)
	}
	cfg := a.Config()
	ks := rdb.NewKeySpace(cfg.KeyPrefix, cfg.Name)
	enq := rdb.EnqueueTarget(ks, name)
	enq.KeyConcurrency, enq.MaxKeyBacklog = s.keyConc, s.keyBacklog
	return &core{
		app: a, name: name, set: s, rdb: a.Client(), ks: ks, keys: rdb.Keys(ks, name), enq: enq,
		log: a.Logger().With("queue", name), worker: cfg.WorkerID, hooks: taskHooks(cfg.Hooks),
	}, nil
}

// applyOptions returns the default settings with opts applied, or what is
// wrong with them.
func applyOptions(opts []Option) (settings, error) {
	s := defaultSettings()
	var errs []error
	for _, o := range opts {
		if o == nil {
			continue
		}
		if err := o.apply(&s); err != nil {
			errs = append(errs, err)
		}
	}
	if s.keyed && len(s.levels) > 1 {
		errs = append(errs, errors.New("a keyed queue has one priority level"))
	}
	if s.rate.N > 0 && !s.keyed {
		errs = append(errs, errors.New("KeyRate needs a keyed queue (Keyed)"))
	}
	if err := checkKeySettings(&s); err != nil {
		errs = append(errs, err)
	}
	return s, errors.Join(errs...)
}

// Name returns the queue's name.
func (q *core) Name() string { return q.name }

// Definition returns the queue's definition.
func (q *core) Definition() Definition {
	s := q.set
	return Definition{
		Name: q.name, Keyed: s.keyed, Levels: s.levels, Strict: s.strict, Concurrency: s.concurrency,
		Timeout: s.timeout, MaxRetries: s.maxRetries, BackoffMin: s.backoffMin, BackoffMax: s.backoffMax,
		Retention: s.retention, Visibility: s.visibility, DeadMax: s.deadMax, DeadAge: s.deadAge,
		KeyRate: s.rate.N, KeyWindow: s.rate.Window, Rate: s.qrate.N, RateWindow: s.qrate.Window,
		UniqueTTL: s.uniqueTTL, KeyConcurrency: s.keyConc, MaxKeyBacklog: s.keyBacklog,
	}
}

// register writes the queue's definition to the registry once per process.
// A Redis user that may only read the registry (a producer's ACL) goes on
// when the queue is registered already, by its workers or an operator.
func (q *core) register(ctx context.Context) error {
	q.regOnce.Lock()
	defer q.regOnce.Unlock()
	if q.reg {
		return nil
	}
	b, err := json.Marshal(q.Definition())
	if err != nil {
		return err
	}
	if err := rdb.Register(ctx, q.rdb, q.ks.TaskQueues(), q.name, b); err != nil {
		if !topology.Denied(err) {
			return fmt.Errorf("task queue %q: register: %w", q.name, err)
		}
		ok, rerr := rdb.Registered(ctx, q.rdb, q.ks.TaskQueues(), q.name)
		if rerr != nil || !ok {
			return fmt.Errorf("task queue %q: register (the Redis user may not write the registry, "+
				"and the queue is not registered yet: start one of its workers first): %w", q.name, err)
		}
	} else if err := q.writeSchema(ctx); err != nil {
		return err
	} else if err := q.writeKeyConcurrency(ctx); err != nil {
		return err
	}
	q.reg = true
	return nil
}

// Queues returns the definitions of the app's task queues recorded in
// Redis, by name.
func Queues(ctx context.Context, a *app.App) ([]Definition, error) {
	cfg := a.Config()
	m, err := rdb.Definitions(ctx, a.Client(), rdb.NewKeySpace(cfg.KeyPrefix, cfg.Name).TaskQueues())
	if err != nil {
		return nil, err
	}
	defs := make([]Definition, 0, len(m))
	for _, v := range m {
		var d Definition
		if err := json.Unmarshal([]byte(v), &d); err != nil {
			return nil, fmt.Errorf("task queue registry: %w", err)
		}
		defs = append(defs, d)
	}
	sort.Slice(defs, func(i, j int) bool { return defs[i].Name < defs[j].Name })
	return defs, nil
}

// Lookup returns queue name as recorded in Redis by the program that
// declared it, with untyped JSON payloads and results: for tools without
// the app's code, such as the CLI. When a program declared the queue with
// a payload type, the queue refuses payloads that type would not decode
// exactly (see EnqueueMany): a's program's own type when it declared the
// queue, else the schema of the type the latest declaring program recorded
// in the registry. It returns ErrUnknownQueue when no program declared the
// queue.
func Lookup(ctx context.Context, a *app.App, name string) (*Queue[json.RawMessage, json.RawMessage], error) {
	opts, sch, err := recordedWithSchema(ctx, a, name)
	if err != nil {
		return nil, err
	}
	q, err := declare[json.RawMessage, json.RawMessage](a, name, opts)
	if err != nil {
		return nil, err
	}
	q.reg = true
	q.check = declared.TaskPayload(a, name) // declared typed in this program
	if q.check == nil && sch != nil {
		q.check = sch.CheckJSON
	}
	return q, nil
}

// HandleLookup is Handle for queue name as recorded in Redis (see Lookup),
// with untyped JSON payloads and results: for workers without the app's
// code, such as "leat worker --exec" with a subprocess handler. opts come
// after the recorded options and override them (Grace, say).
func HandleLookup(ctx context.Context, a *app.App, name string, fn func(ctx context.Context, t *Task[json.RawMessage]) (json.RawMessage, error), opts ...Option) (*Queue[json.RawMessage, json.RawMessage], error) {
	rec, err := recorded(ctx, a, name)
	if err != nil {
		return nil, err
	}
	q, err := Handle(a, name, fn, append(rec, opts...)...)
	if err != nil {
		return nil, err
	}
	q.reg = true
	// the registry is not written back, but the key concurrency its Redis
	// scripts read is, so a worker without the app's code applies it too
	if err := q.writeKeyConcurrency(ctx); err != nil {
		return nil, err
	}
	return q, nil
}

// recorded returns the options of queue name as recorded in Redis.
func recorded(ctx context.Context, a *app.App, name string) ([]Option, error) {
	cfg := a.Config()
	v, ok, err := rdb.Definition(ctx, a.Client(), rdb.NewKeySpace(cfg.KeyPrefix, cfg.Name).TaskQueues(), name)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, fmt.Errorf("%w %q", ErrUnknownQueue, name)
	}
	opts, err := definitionOptions([]byte(v))
	if err != nil {
		return nil, fmt.Errorf("task queue %q: definition: %w", name, err)
	}
	return opts, nil
}

// definitionOptions returns the options a registry definition records. They
// are the options a declaration gives, checked the same way, so a corrupt or
// hand-edited definition (a zero timeout, no priority level) is refused by
// Declare rather than run.
func definitionOptions(b []byte) ([]Option, error) {
	var d Definition
	if err := json.Unmarshal(b, &d); err != nil {
		return nil, err
	}
	return d.options(), nil
}

// options returns the options that declare the queue d defines.
func (d Definition) options() []Option {
	opts := []Option{
		Concurrency(max(d.Concurrency, 1)), Timeout(d.Timeout), MaxRetries(d.MaxRetries),
		Backoff(d.BackoffMin, d.BackoffMax), Retention(d.Retention), Visibility(d.Visibility),
		KeepDead(d.DeadMax, d.DeadAge),
	}
	if d.Strict {
		names := make([]string, len(d.Levels))
		for i, l := range d.Levels {
			names[i] = l.Name
		}
		opts = append(opts, Priorities(names...))
	} else {
		opts = append(opts, Weighted(d.Levels...))
	}
	if d.Keyed {
		opts = append(opts, Keyed())
	}
	if d.KeyRate != 0 || d.KeyWindow != 0 {
		opts = append(opts, KeyRate(d.KeyRate, d.KeyWindow))
	}
	if d.Rate != 0 || d.RateWindow != 0 {
		opts = append(opts, Rate(d.Rate, d.RateWindow))
	}
	if d.UniqueTTL != 0 {
		opts = append(opts, UniqueFor(d.UniqueTTL))
	}
	if d.KeyConcurrency != 0 {
		opts = append(opts, KeyConcurrency(d.KeyConcurrency))
	}
	if d.MaxKeyBacklog != 0 {
		opts = append(opts, MaxKeyBacklog(d.MaxKeyBacklog))
	}
	return opts
}

// SetConcurrency sets how many tasks of the queue each worker runs at once,
// for the workers running now and later, until set again or cleared
// (ClearConcurrency); it overrides the Concurrency option. Workers apply it
// within a second. It refuses (ErrBadSetting) less than 1 and more than
// the app's MaxTaskConcurrency (app.Config); a worker whose own maximum is
// lower runs that many.
func (q *core) SetConcurrency(ctx context.Context, n int) error {
	if n < 1 {
		return fmt.Errorf("%w: concurrency %d must be at least 1", ErrBadSetting, n)
	}
	if m := q.maxConcurrency(); n > m {
		return fmt.Errorf("%w: concurrency %d is above the maximum of %d per worker (app.Config.MaxTaskConcurrency, --max-concurrency)", ErrBadSetting, n, m)
	}
	return rdb.SetLiveConcurrency(ctx, q.rdb, q.ks.TaskConfig(q.name), n)
}

// maxConcurrency returns the most tasks of the queue a worker of this app
// runs at once.
func (q *core) maxConcurrency() int {
	return cmp.Or(q.app.Config().MaxTaskConcurrency, app.DefaultMaxTaskConcurrency)
}

// ClearConcurrency removes the concurrency SetConcurrency set: each worker
// goes back to its program's Concurrency option within a second.
func (q *core) ClearConcurrency(ctx context.Context) error {
	return rdb.ClearLiveConcurrency(ctx, q.rdb, q.ks.TaskConfig(q.name))
}

// level returns the index of priority name; "" is the level named
// DefaultPriority when the queue has one, else its first.
func (q *core) level(name string) (int, bool) {
	if name == "" {
		for i, l := range q.set.levels {
			if l.Name == DefaultPriority {
				return i, true
			}
		}
		return 0, true
	}
	for i, l := range q.set.levels {
		if l.Name == name {
			return i, true
		}
	}
	return 0, false
}

// Find returns the queue, among those recorded in Redis, that holds task
// id (see Lookup), or an error matching ErrNotFound. It costs one round
// trip for all queues.
func Find(ctx context.Context, a *app.App, id string) (*Queue[json.RawMessage, json.RawMessage], error) {
	defs, err := Queues(ctx, a)
	if err != nil {
		return nil, err
	}
	cfg := a.Config()
	ks := rdb.NewKeySpace(cfg.KeyPrefix, cfg.Name)
	hashes := make([]string, len(defs))
	for i, d := range defs {
		hashes[i] = ks.TaskPrefix(d.Name) + id
	}
	exist, err := rdb.TasksExist(ctx, a.Client(), hashes)
	if err != nil {
		return nil, err
	}
	for i, d := range defs {
		if exist[i] {
			return Lookup(ctx, a, d.Name)
		}
	}
	return nil, fmt.Errorf("task %q in any queue of app %q: %w", id, cfg.Name, ErrNotFound)
}

// unknownLevel says which levels the queue has.
func (q *core) unknownLevel(level string) error {
	names := make([]string, len(q.set.levels))
	for i, l := range q.set.levels {
		names[i] = l.Name
	}
	return fmt.Errorf("unknown priority %q (levels: %v)", level, names)
}
