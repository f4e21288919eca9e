// The worker: one app worker's share of a queue (workerService.Run). Its
// parts run on goroutines of their own: the fetchers (fetchloop.go) take
// tasks into the slots free (slots.go) and start them (start.go); the
// completer (completer.go) records their outcomes; the toucher (toucher.go)
// keeps their entries from looking idle; the listener (livesettings.go)
// applies cancellations and live settings; webhooks are delivered
// (webhook.go). Run writes down the order in which they stop.

package task

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/leatdev/leat/internal/rdb"
)

// Causes of a running task's context ending early.
var (
	// ErrCancelled is the cause of a task's context when the task was
	// cancelled (Queue.Cancel, "leat tasks cancel").
	ErrCancelled = errors.New("task: cancelled")
	// ErrTimeout is the cause of a task's context when its attempt ran out
	// of time; the attempt fails with it.
	ErrTimeout = errors.New("task: timed out")
	// ErrHandBack, returned by a handler (wrapped or matched by errors.Is),
	// hands its task back to the queue without counting the attempt: the
	// handler could not run it here (a subprocess handler with no process
	// ready, say), and another worker, or this one later, takes it.
	ErrHandBack = errors.New("task: handed back, not run")
	// errStopping ends the tasks still running when a worker's grace
	// period ends: they are handed back to the queue.
	errStopping = errors.New("task: worker stopping")
)

// workerService runs a queue's workers inside an app worker (app.Service).
type workerService struct {
	*core
	run func(ctx context.Context, t *rdb.Fetched) ([]byte, error)
}

func (s *workerService) Name() string { return "task-" + s.name }

// TaskQueue names the queue the service runs, for the worker's start line.
func (s *workerService) TaskQueue() string { return s.name }

// running is a task this worker runs.
type running struct {
	f      *rdb.Fetched
	cancel context.CancelCauseFunc
}

// worker is one app worker's share of a queue.
type worker struct {
	s *workerService
	q *core
	// done takes the outcomes to the completer; quit is closed when the
	// worker stops, after which it waits for no outcome (see report).
	done chan ended
	quit chan struct{}
	// poll is how long a fetcher waiting for a Resume or the end of a rate
	// window waits at most before it fetches again (pausePoll), in case it
	// missed the message that would have woken it.
	poll time.Duration
	// share is what the App's task queue workers share: the blocking
	// reads and the subscription (block.go, hub.go).
	share *share

	mu       sync.Mutex
	limit    int                 // concurrency
	capped   bool                // the limit read was above the maximum, and logged
	active   map[string]*running // by task ID
	reserved int                 // slots held by fetches under way
	freed    chan struct{}       // signalled when a slot frees or the limit grows
	resumed  chan struct{}       // closed (and replaced) when the queue is resumed or its live rate changes
	rr       []int               // weighted round robin state
	lost     lost                // calls whose replies were lost
	steps    *flowRetrier        // flow steps to try again (flow_retry.go)
	slots    uint64              // slots of read and own calls in use (claimSlot)
	outs     []rdb.Outcome       // the completer's, reused
	working  sync.WaitGroup      // running handlers
	paused   atomic.Bool         // the last fetch found the queue paused
	liveRate atomic.Bool         // a rate limit was set live (SetRate), when last read
	global   atomic.Bool         // a global concurrency applies (SetGlobalConcurrency), when last read

	// The recovery of this worker's own pending entries (FetchOwn) never
	// runs while entries a blocking read gave it wait for their given call
	// (givens: from the read until that call ran, a call sent again after a
	// lost reply included): it would start their tasks, and the given call
	// would then hand them out again (as its own earlier run's), starting
	// them twice. w.mu guards both counts.
	givens int           // blocking reads and given calls outstanding
	owns   int           // recoveries under way or waiting for the givens
	gate   chan struct{} // closed and replaced when either count falls

	reading chan struct{}      // closed when the blocking read under way ends (nil: none)
	endRead context.CancelFunc // ends the wait of that read (a lowered concurrency, a recovery waiting)
}

// Run runs the queue's share of an app worker until ctx is done.
//
// Shutdown order: stop fetching; let running tasks finish within the grace
// period, then cancel the rest (errStopping) and hand them back to the
// queue; record every outcome; then stop touching, listening and trying
// flow steps again (the flows' sweep does those left).
func (s *workerService) Run(ctx context.Context) error {
	q := s.core
	sh := shareOf(ctx, q)
	defer sh.drop()
	if err := sh.setUp(ctx, q); err != nil {
		return err
	}
	w := &worker{
		s: s, q: q, done: make(chan ended, cmp.Or(q.set.outcomes, outcomeBuffer)), poll: pausePoll, limit: min(q.set.concurrency, q.maxConcurrency()),
		active: map[string]*running{}, freed: make(chan struct{}, 1), resumed: make(chan struct{}),
		gate: make(chan struct{}), share: sh, quit: make(chan struct{}), steps: newFlowRetrier(q),
	}
	sh.join(ctx, q)
	defer sh.leave(q)
	w.readLimit(ctx)
	runCtx, stopRunning := context.WithCancelCause(context.WithoutCancel(ctx))
	defer stopRunning(errStopping)
	bgCtx, stopBg := context.WithCancel(context.WithoutCancel(ctx))
	var bg, completer sync.WaitGroup
	completer.Add(1)
	go func() { defer completer.Done(); w.complete(ctx) }()
	bg.Add(4)
	go func() { defer bg.Done(); w.touch(bgCtx) }()
	go func() { defer bg.Done(); w.steps.run(bgCtx) }()
	go func() { defer bg.Done(); w.deliver(bgCtx) }()
	go func() { defer bg.Done(); w.listen(bgCtx) }()
	q.log.Info("task worker started", "concurrency", w.currentLimit())

	w.fetch(ctx, runCtx)

	if !waitTimeout(&w.working, q.set.grace) {
		q.log.Warn("tasks still running after the grace period: handing them back")
		stopRunning(errStopping)
		if !waitTimeout(&w.working, stuckAfter(q.set.grace)) {
			// Their entries stay pending: the leader reclaims them after the
			// visibility timeout, since this worker no longer touches them.
			q.log.Error("task handlers did not return when their context ended: leaving them behind", "tasks", w.running())
		}
	}
	close(w.quit) // a handler returning later reports nothing
	completer.Wait()
	stopBg()
	bg.Wait()
	q.log.Info("task worker stopped")
	return nil
}

// createGroups creates the ready streams and their consumer group.
func (q *core) createGroups(ctx context.Context) error {
	for l := range q.set.levels {
		if err := rdb.CreateGroup(ctx, q.rdb, q.ks.TaskStream(q.name, l)); err != nil {
			return fmt.Errorf("task queue %q: create group: %w", q.name, err)
		}
	}
	return nil
}

// sleep waits d or until ctx is done.
func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

// waitTimeout waits for wg at most d and reports whether it finished.
func waitTimeout(wg *sync.WaitGroup, d time.Duration) bool {
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-done:
		return true
	case <-t.C:
		return false
	}
}

// running returns how many handlers run.
func (w *worker) running() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.active)
}

// stuckAfter is how long a stopping worker waits for handlers that ignore
// their cancelled context, after the grace period.
func stuckAfter(grace time.Duration) time.Duration {
	return min(max(grace, time.Second), 10*time.Second)
}
