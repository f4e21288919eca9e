package runner

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bsm/redislock"
	"github.com/google/uuid"
	"github.com/leatdev/leat/executor"
	"github.com/leatdev/leat/internal/core"
	"github.com/leatdev/leat/internal/lease"
	"github.com/leatdev/leat/internal/rdb"
	"github.com/redis/go-redis/v9"
)

// Handler runs a processor over the events of one partition, fed by feed.
// The app wraps typed processors (func(ctx, *stream.Events[T]) error) into
// a Handler.
type Handler func(ctx context.Context, feed core.Feed) error

// Config configures one Executor.
type Config struct {
	// Stream is the stream processed. Required.
	Stream *core.Core
	// Processor names the processor: the consumer group. Required.
	Processor string
	// Handler processes the events of one partition. Required.
	Handler Handler
	// Options of the processor, merged with the package defaults.
	Options executor.Options
	// ID identifies the executor. Default: a random UUID.
	ID string
	// Worker names the worker running the executor, for logs and reports.
	Worker string
	// Logger receives the executor's logs. Default slog.Default().
	Logger *slog.Logger
	// Hooks receive runtime events, for metrics (see Hook).
	Hooks []executor.Hook
}

// Executor runs one processor on one worker: it joins the processor's
// membership, takes the locks of the partitions assigned to it, fetches and
// hands their events to the processor, and takes part in rebalancing.
type Executor struct {
	id        string
	worker    string
	processor string
	stream    *core.Core
	handler   Handler
	opts      executor.Options
	app       redis.UniversalClient // the application's client: processors' fenced writes
	client    redis.UniversalClient // the executor's own client during Run (see runtimeClient)
	own       *redis.Client         // see ownClient; nil for Cluster clients
	started   time.Time             // local, for its monotonic reading; see startedOnServer
	startedMu sync.Mutex
	startedAt time.Time // Run's start on the server's clock, once known
	keys      rdb.KeySpace
	group     rdb.Group             // the processor's state in Redis, on client
	appGroup  rdb.Group             // the same on app, for calls outside Run
	locker    *redislock.Client     // the admin lock
	lockc     redis.UniversalClient // partition locks (see lease.Client)
	log       *slog.Logger
	obs       hooks

	fetch *fetcher
	acks  *acker

	haltOnce sync.Once
	haltErr  error
	halted   chan struct{}

	wake chan struct{} // the assignment may have changed

	atRisk map[int]bool // partitions whose lag was reported near retention (under mu)

	stats        acquireStats
	refreshCount atomic.Int64 // lock refresh rounds done
	commits      atomic.Int64 // table commits applied (tables.go), for tests and debugging
	// commitInterval is how long deliveries done with table writes may wait
	// for others to be committed with (tables.go); tests lengthen it.
	commitInterval time.Duration

	mu    sync.Mutex
	owned map[int]*partition // partitions whose goroutine runs
	ready map[int]bool       // partitions whose lock is held and whose consumer runs
}

// acquireStats counts lock attempts, for tests and debugging.
type acquireStats struct {
	attempts        atomic.Int64 // lock attempts
	busy            atomic.Int64 // attempts that found another holder
	retriedOnNotice atomic.Int64 // retries woken by a "released" notice
	retriedOnTimer  atomic.Int64 // retries of a held lock woken by its expiry or the fallback
	released        atomic.Int64 // locks released while still held (by this acquisition)
}

// New validates cfg and returns an executor.
func New(cfg Config) (*Executor, error) {
	if cfg.Stream == nil || cfg.Handler == nil {
		return nil, errors.New("executor: Stream and Handler are required")
	}
	if err := rdb.CheckName("processor", cfg.Processor); err != nil {
		return nil, err
	}
	opts, err := cfg.Options.WithDefaults()
	if err != nil {
		return nil, fmt.Errorf("processor %q: %w", cfg.Processor, err)
	}
	if opts.Prefetch == 0 {
		opts.Prefetch = executor.PrefetchFor(cfg.Stream.Partitions())
	}
	if cfg.ID == "" {
		cfg.ID = uuid.NewString()
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	cat := cfg.Stream.Catalog()
	e := &Executor{
		commitInterval: commitInterval,
		id:             cfg.ID,
		worker:         cfg.Worker,
		processor:      cfg.Processor,
		stream:         cfg.Stream,
		handler:        cfg.Handler,
		opts:           opts,
		app:            cat.Client(),
		client:         cat.Client(),
		keys:           cat.Keys(),
		group:          rdb.NewGroup(cat.Client(), cat.Keys(), cfg.Stream.Name(), cfg.Processor),
		appGroup:       rdb.NewGroup(cat.Client(), cat.Keys(), cfg.Stream.Name(), cfg.Processor),
		locker:         redislock.New(cat.Client()),
		log:            cfg.Logger.With("stream", cfg.Stream.Name(), "processor", cfg.Processor, "executor", cfg.ID),
		obs:            newHooks(cfg.Hooks),
		halted:         make(chan struct{}),
		wake:           make(chan struct{}, 1),
		owned:          map[int]*partition{},
		ready:          map[int]bool{},
	}
	e.fetch = newFetcher(e)
	e.acks = newAcker(cat.Client(), cfg.Processor, e.log)
	return e, nil
}

// ID returns the executor's ID.
func (e *Executor) ID() string { return e.id }

// Options returns the executor's options with defaults filled in.
func (e *Executor) Options() executor.Options { return e.opts }

// Owned returns the partitions this executor holds the lock of and
// processes, sorted.
func (e *Executor) Owned() []int {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := make([]int, 0, len(e.ready))
	for p := range e.ready {
		out = append(out, p)
	}
	slices.Sort(out)
	return out
}

// halt records the first halting error and wakes Run.
func (e *Executor) halt(p int, err error) {
	e.haltOnce.Do(func() {
		e.haltErr = err
		close(e.halted)
	})
}

func (e *Executor) poke() {
	select {
	case e.wake <- struct{}{}:
	default:
	}
}

// Run runs the executor until ctx is done (it returns nil) or the failure
// policy halts it (it returns the processor's error). Either way it shuts
// down in this order: leave the membership and rebalance so the survivors
// take over at once; stop fetching; let each consumer finish its in-flight
// event within the grace period; acknowledge; release the locks.
func (e *Executor) Run(ctx context.Context) error {
	e.started = time.Now()
	// The executor's own connections, whatever the application's pool
	// (connections.go); set before any goroutine starts.
	var closeOwn, closeLocks func()
	e.client, e.own, closeOwn = runtimeClient(e.app)
	defer closeOwn()
	e.group = rdb.NewGroup(e.client, e.keys, e.stream.Name(), e.processor)
	e.locker = redislock.New(e.client)
	e.acks.client = e.client
	e.lockc, closeLocks = lease.Client(e.app, lockConns)
	defer closeLocks()
	bg, stopBg := context.WithCancel(context.WithoutCancel(ctx))
	var wg sync.WaitGroup
	defer wg.Wait()
	defer stopBg()
	goFn := func(f func(context.Context)) {
		wg.Add(1)
		go func() { defer wg.Done(); f(bg) }()
	}

	if err := e.join(ctx); err != nil {
		if ctx.Err() != nil {
			return nil // cancelled while starting
		}
		return err
	}
	goFn(e.fetch.run)
	goFn(e.refreshLocks)
	goFn(e.trimChecker)
	goFn(func(ctx context.Context) {
		e.acks.run(ctx, func(err error) { e.log.Warn("ack failed; will retry", "error", err) })
	})
	// The heartbeat stops, and is waited for, before the executor leaves,
	// so that a heartbeat or rebalance in flight cannot add it back as a
	// ghost member after its ZREM; the listener (which only wakes the main
	// loop) stops after the leave notice, which ends its blocking read.
	hctx, stopHeartbeat := context.WithCancel(bg)
	lctx, stopListener := context.WithCancel(bg)
	var hwg, lwg sync.WaitGroup
	hwg.Add(1)
	go func() { defer hwg.Done(); e.heartbeat(hctx) }()
	lwg.Add(1)
	go func() { defer lwg.Done(); e.listen(lctx) }()
	defer lwg.Wait()
	defer stopListener()
	defer hwg.Wait()
	defer stopHeartbeat()

	if e.opts.JoinDelay > 0 {
		sleepCtx(ctx, e.opts.JoinDelay)
	}
	e.requestRebalance(ctx)

	var runErr error
	var pwg sync.WaitGroup
	check := time.NewTicker(max(e.opts.LockExpiry/2, 100*time.Millisecond))
	defer check.Stop()
	applied := int64(-1)
loop:
	for {
		select {
		case <-ctx.Done():
			break loop
		case <-e.halted:
			runErr = e.haltErr
			break loop
		case <-e.wake:
		case <-check.C:
			e.maybeRebalance(ctx)
		}
		a, err := e.loadAssignment(ctx)
		if err != nil {
			if ctx.Err() == nil {
				e.log.Warn("assignment not read", "error", err)
			}
			continue
		}
		if a.Version != applied || e.missing(a) {
			applied = a.Version
			e.apply(bg, a, &pwg)
		}
	}

	// Shutdown (see the order above).
	stopHeartbeat()
	hwg.Wait()
	leaveCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	if err := e.leave(leaveCtx); err != nil {
		e.log.Warn("leave failed; others will rebalance when the heartbeat expires", "error", err)
	}
	cancel()
	stopListener()
	e.mu.Lock()
	for _, p := range e.owned {
		p.softStop()
	}
	e.mu.Unlock()
	pwg.Wait()
	fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	if err := e.acks.flush(fctx); err != nil {
		e.log.Warn("final ack failed; events will be delivered again", "error", err)
	}
	cancel()
	select {
	case <-e.halted:
		// A halt during shutdown: a processor abandoned while draining.
		runErr = e.haltErr
	default:
	}
	return runErr
}

// missing reports whether a partition assigned to e is not running (for
// example after its lock was lost), so the assignment must be applied again.
func (e *Executor) missing(a assignment) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, p := range a.Members[e.id] {
		if _, ok := e.owned[p]; !ok {
			return true
		}
	}
	return false
}

// apply starts the partitions a assigns to e and releases the others.
func (e *Executor) apply(ctx context.Context, a assignment, wg *sync.WaitGroup) {
	mine := a.Members[e.id]
	e.mu.Lock()
	defer e.mu.Unlock()
	for n, p := range e.owned {
		if !slices.Contains(mine, n) {
			p.softStop()
		}
	}
	for _, n := range mine {
		if old, ok := e.owned[n]; ok {
			select {
			case <-old.stop:
				// Being released: start again once it is gone (poked then).
			default:
				continue
			}
			continue
		}
		p := e.newPartition(ctx, n)
		e.owned[n] = p
		wg.Add(1)
		go func() {
			defer wg.Done()
			e.runPartition(p)
		}()
	}
	e.obs.Rebalanced(e.stream.Name(), e.processor, mine)
	e.log.Info("assignment applied", "version", a.Version, "partitions", fmt.Sprint(mine))
}
