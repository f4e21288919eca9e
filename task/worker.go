package task

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/bits"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	streamcore "github.com/leatdev/leat/internal/core"
	"github.com/leatdev/leat/internal/taskrdb"
	"github.com/redis/go-redis/v9"
)

// Causes of a running task's context ending early.
var (
	// ErrCancelled is the cause of a task's context when the task was
	// cancelled (Queue.Cancel, "leat tasks cancel").
	ErrCancelled = errors.New("task: cancelled")
	// ErrTimeout is the cause of a task's context when its attempt ran out
	// of time; the attempt fails with it.
	ErrTimeout = errors.New("task: timed out")
	// errStopping ends the tasks still running when a worker's grace
	// period ends: they are handed back to the queue.
	errStopping = errors.New("task: worker stopping")
)

// workerService runs a queue's workers inside an app worker (app.Service).
type workerService struct {
	*core
	run func(ctx context.Context, t *taskrdb.Fetched) ([]byte, error)
}

func (s *workerService) Name() string { return "task-" + s.name }

// run calls the typed handler on a fetched task, through the queue's
// middleware when it has any.
func (q *Queue[P, R]) run(ctx context.Context, f *taskrdb.Fetched) ([]byte, error) {
	if q.chain != nil {
		return q.runChain(ctx, f)
	}
	h, err := decodeHeaders(f.Headers)
	if err != nil {
		return nil, SkipRetry(err)
	}
	r, err := q.call(ctx, f, f.Payload, h)
	if err != nil {
		return nil, err
	}
	b, err := encodePayload(r) // a raw result is checked as a raw payload is
	if err != nil {
		return nil, SkipRetry(fmt.Errorf("encode result: %w", err))
	}
	return b, nil
}

// call decodes payload and calls the handler with f's task.
func (q *Queue[P, R]) call(ctx context.Context, f *taskrdb.Fetched, payload []byte, headers map[string]string) (R, error) {
	t := &Task[P]{
		ID: f.ID, Queue: q.name, Attempt: f.Attempt, MaxRetries: f.MaxRetry, Key: f.Key, EnqueuedAt: f.Enqueued,
		Headers: headers,
	}
	t.Deadline, _ = ctx.Deadline()
	t.rep = q.updates(f)
	if err := json.Unmarshal(payload, &t.Payload); err != nil {
		var zero R
		return zero, SkipRetry(fmt.Errorf("decode payload: %w", err))
	}
	return q.handler(ctx, t)
}

// running is a task this worker runs.
type running struct {
	f      *taskrdb.Fetched
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
	slots    uint64              // slots of read and own calls in use (claimSlot)
	outs     []taskrdb.Outcome   // the completer's, reused
	working  sync.WaitGroup      // running handlers
	paused   atomic.Bool         // the last fetch found the queue paused
	liveRate atomic.Bool         // a rate limit was set live (SetRate), when last read

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
// queue; record every outcome; then stop touching and listening.
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
		gate: make(chan struct{}), share: sh, quit: make(chan struct{}),
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
	bg.Add(3)
	go func() { defer bg.Done(); w.touch(bgCtx) }()
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
		err := q.rdb.XGroupCreateMkStream(ctx, q.ks.TaskStream(q.name, l), taskrdb.Group, "0").Err()
		if err != nil && !strings.HasPrefix(err.Error(), "BUSYGROUP") {
			return fmt.Errorf("task queue %q: create group: %w", q.name, err)
		}
	}
	return nil
}

func (w *worker) currentLimit() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.limit
}

// reserve holds every free slot for one fetch and returns how many, with
// the fetch's quotas per priority level (see quotas). A patient fetch takes
// nothing (short) while fewer than half the slots are free and tasks run:
// slots that free close together are filled by one fetch, not one each.
func (w *worker) reserve(patient bool) (n int, quota []int, short bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	n = w.limit - len(w.active) - w.reserved
	if n <= 0 {
		return 0, nil, false
	}
	if patient && 2*n < w.limit && len(w.active) > 0 {
		return 0, nil, true
	}
	w.reserved += n
	return n, w.quotas(n), false
}

// room returns how many tasks a fetch that reserved n slots may start now:
// fewer when the concurrency was lowered since.
func (w *worker) room(n int) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return max(0, min(n, w.limit-len(w.active)-(w.reserved-n)))
}

// unreserve gives back the n slots a fetch held, once the tasks it took
// were started (or handed back); a slot left over goes to the next fetch.
func (w *worker) unreserve(n int) {
	w.mu.Lock()
	w.reserved -= n
	left := w.limit - len(w.active) - w.reserved
	w.mu.Unlock()
	if left > 0 {
		w.signal()
	}
}

func (w *worker) signal() {
	select {
	case w.freed <- struct{}{}:
	default:
	}
}

// fetchers is how many fetches of a worker may be under way at once: while
// one fetch is on its round trip, the slots that free meanwhile are filled
// by the next, so a worker whose handlers are quick is not bound by one
// round trip per concurrency's worth of tasks.
const fetchers = 2

// fetchWait bounds how long a fetcher waits for half the slots to be free
// (see reserve) before it fetches for the slots free.
const fetchWait = time.Millisecond

// fetch takes tasks while ctx lasts and starts each at once: the worker
// holds no unstarted tasks but those of the fetches under way between the
// read and their start (handed back when ctx ended meanwhile). Each fetch
// takes the slots free when it begins, so the tasks taken never exceed the
// concurrency, but after a lost reply (see lost).
func (w *worker) fetch(ctx, runCtx context.Context) {
	var wg sync.WaitGroup
	for range fetchers {
		wg.Add(1)
		go func() { defer wg.Done(); w.fetchLoop(ctx, runCtx) }()
	}
	wg.Wait()
	// Calls cut short by the stop: send them once more, so that the tasks
	// they took, if they ran, go back to the queue now.
	for _, again := range w.lost.again {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
		got, err := again(sctx, 0, nil)
		cancel()
		if err == nil {
			for i := range got {
				w.handBack(&got[i])
			}
		}
	}
}

// lost is what the worker's fetchers have to do after lost replies
// (guarded by worker.mu).
//
// A call whose reply was lost may have taken tasks: they are active with
// this worker, and nothing else would run them before the visibility
// timeout. So the call is sent again, as it was (again), before anything
// else: fetch.lua hands out the tasks of its first run again. The tasks it
// returns may then exceed the slots free, by at most the first call's
// count. A blocking read whose reply was lost leaves entries pending with
// this worker whose tasks nobody took: the next call takes those first
// (recover).
type lost struct {
	again   []fetchCall
	recover bool
}

// fetchCall is a fetch call to send again: n and quota are the slots free
// now (0 and nil: none; only what the first run took).
type fetchCall func(ctx context.Context, n int, quota []int) ([]taskrdb.Fetched, error)

// sendCall runs c, and queues it to be sent again when its reply was lost.
func (w *worker) sendCall(ctx context.Context, c fetchCall, n int, quota []int) ([]taskrdb.Fetched, error) {
	got, err := c(ctx, n, quota)
	if lostReply(err) {
		w.sendAgain(c)
	}
	return got, err
}

// lostReply reports whether a fetch call failed with err without a reply
// that says what it did: an error, but a refusal (held back: it took
// nothing).
func lostReply(err error) bool { return err != nil && !heldBack(err) }

// sendAgain queues a call whose reply was lost.
func (w *worker) sendAgain(c fetchCall) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.lost.again = append(w.lost.again, c)
}

// toSendAgain returns a call to send again, if any, and whether to recover
// the tasks of a lost blocking read's entries, clearing both.
func (w *worker) toSendAgain() (c fetchCall, recover bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if n := len(w.lost.again); n > 0 {
		c = w.lost.again[n-1]
		w.lost.again = w.lost.again[:n-1]
		return c, false
	}
	recover, w.lost.recover = w.lost.recover, false
	return nil, recover
}

// claimSlot returns a slot for a read or own call (taskrdb.NewCallIn), held
// until the call ran with its reply read: Redis keeps what such a call took
// per slot, for the call to be sent again after its reply was lost, and a
// call of the same slot would replace it. A worker's calls under way or
// waiting to be sent again are at most one per fetcher (a fetcher sends a
// call again before it makes a new one), so slots 0 to fetchers-1 serve.
func (w *worker) claimSlot() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	slot := bits.TrailingZeros64(^w.slots)
	w.slots |= 1 << slot
	return slot
}

func (w *worker) freeSlot(slot int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.slots &^= 1 << slot
}

// memoCall returns a read or own call (fetch.lua keeps what it took, for
// it to be sent again) of a slot of its own, run by send with the call's
// ID. Once the call ran with its reply read, or was refused (it took
// nothing), its slot is freed and done, if any, is called.
func (w *worker) memoCall(done func(), send func(ctx context.Context, call string, n int, quota []int) ([]taskrdb.Fetched, error)) fetchCall {
	slot := w.claimSlot()
	call := taskrdb.NewCallIn(slot)
	var once sync.Once
	return func(ctx context.Context, n int, quota []int) ([]taskrdb.Fetched, error) {
		got, err := send(ctx, call, n, quota)
		if !lostReply(err) {
			once.Do(func() {
				w.freeSlot(slot)
				if done != nil {
					done()
				}
			})
		}
		return got, err
	}
}

func (w *worker) setRecover() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.lost.recover = true
}

// enterGiven opens a given section (see worker.givens), once no recovery
// is under way or waiting; false when ctx ended first.
func (w *worker) enterGiven(ctx context.Context) bool {
	w.mu.Lock()
	for w.owns > 0 {
		if !w.waitGate(ctx) {
			return false
		}
	}
	w.givens++
	w.mu.Unlock()
	return true
}

// leaveGiven closes a given section.
func (w *worker) leaveGiven() {
	w.mu.Lock()
	w.givens--
	w.openGate()
	w.mu.Unlock()
}

// enterOwn starts a recovery once no given section is open, keeping new
// ones from opening meanwhile; false when ctx ended first.
//
// A given section is open while the worker's other fetcher waits in a
// blocking read, which, idle, lasts until an entry comes (the App's reader
// reads again while none does): the recovery ends that wait, as it would
// otherwise wait for the next enqueue, or for the entries it is for to be
// reclaimed after the visibility timeout. What the read gave, if anything,
// goes to its given call first; a read not begun yet is not made
// (blockingRead).
func (w *worker) enterOwn(ctx context.Context) bool {
	w.mu.Lock()
	w.owns++
	for w.givens > 0 {
		if w.endRead != nil {
			w.endRead()
		}
		if !w.waitGate(ctx) {
			w.mu.Lock()
			w.owns--
			w.openGate()
			w.mu.Unlock()
			return false
		}
	}
	w.mu.Unlock()
	return true
}

// leaveOwn ends a recovery.
func (w *worker) leaveOwn() {
	w.mu.Lock()
	w.owns--
	w.openGate()
	w.mu.Unlock()
}

// waitGate waits, with w.mu held, for a count to fall: it returns with
// w.mu held again, or false with it released when ctx ended.
func (w *worker) waitGate(ctx context.Context) bool {
	gate := w.gate
	w.mu.Unlock()
	select {
	case <-ctx.Done():
		return false
	case <-gate:
	}
	w.mu.Lock()
	return true
}

// openGate wakes those waiting for a count to fall; w.mu is held.
func (w *worker) openGate() {
	close(w.gate)
	w.gate = make(chan struct{})
}

// rated reports whether a rate limit over the queue applies (its program's,
// or one set live as last read), which may leave entries a blocking read
// gave pending with this worker.
func (w *worker) rated() bool { return w.q.set.qrate.N > 0 || w.liveRate.Load() }

// fetchLoop is one of the worker's fetchers.
func (w *worker) fetchLoop(ctx, runCtx context.Context) {
	q := w.q
	failures := 0
	patient := true
	idle := false                    // the last take was a blocking read that found nothing
	wait := time.NewTimer(fetchWait) // await's, reused (Reset before each use)
	wait.Stop()
	defer wait.Stop()
	for ctx.Err() == nil {
		if !w.handlerReady(ctx) {
			continue
		}
		n, quota, short := w.reserve(patient)
		if n <= 0 {
			w.await(ctx, short, &patient, wait)
			continue
		}
		patient = true
		// Taken before the call: a wake-up that comes while it is under way
		// (the queue resumed, its live rate lifted) ends the wait after a
		// refusal at once, instead of being missed for the window's length.
		woken := w.wakeChan()
		got, err := w.take(ctx, n, quota, idle)
		idle = err == nil && len(got) == 0
		if errors.Is(err, taskrdb.ErrPaused) {
			w.unreserve(n)
			w.setPaused(true)
			w.awaitWake(ctx, w.poll, woken)
			continue
		}
		var limited *taskrdb.RateLimitedError
		if errors.As(err, &limited) {
			w.unreserve(n)
			w.awaitWake(ctx, limited.Wait, woken)
			continue
		}
		if err != nil {
			w.unreserve(n)
			if ctx.Err() != nil {
				break
			}
			failures++
			q.log.Warn("task fetch failed", "error", err)
			sleep(ctx, failureWait(failures))
			continue
		}
		failures = 0
		w.setPaused(false)
		for i := range got {
			t := &got[i]
			if ctx.Err() != nil {
				w.handBack(t)
				continue
			}
			w.start(runCtx, t)
		}
		w.unreserve(n)
	}
}

// handlerReady waits until the queue's handler can run tasks (FetchWhen):
// false when ctx ended, or after a poll when the wait failed.
func (w *worker) handlerReady(ctx context.Context) bool {
	wait := w.q.set.fetchWhen
	if wait == nil {
		return true
	}
	if err := wait(ctx); err != nil {
		if ctx.Err() == nil {
			w.q.log.Warn("task handler not ready: fetching no tasks", "error", err)
			sleep(ctx, w.poll)
		}
		return false
	}
	return true
}

// setPaused records whether the queue was found paused, logging changes.
func (w *worker) setPaused(paused bool) {
	changed := w.paused.Swap(paused) != paused
	if changed && paused {
		w.q.log.Info("task queue paused: starting no tasks until it is resumed")
	} else if changed {
		w.q.log.Info("task queue resumed")
	}
}

// awaitWake waits, after a fetch found the queue paused (d: w.poll) or its
// rate budget spent (d: to the window's end), for woken to be closed (a
// Resume, or a change of the live rate), or d, or w.poll, whichever comes
// first: a worker that missed the message (Pub/Sub delivers at most once:
// a connection lost at that moment loses it) fetches again within w.poll,
// not at the end of a window of an hour. woken is wakeChan's channel from
// before the call that was refused.
func (w *worker) awaitWake(ctx context.Context, d time.Duration, woken <-chan struct{}) {
	t := time.NewTimer(min(d, w.poll))
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-woken:
	case <-t.C:
	}
}

// wakeChan returns the channel that the next wake-up of the fetchers closes
// (wake).
func (w *worker) wakeChan() <-chan struct{} {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.resumed
}

// wake wakes every fetcher waiting on a channel wakeChan returned.
func (w *worker) wake() {
	w.mu.Lock()
	defer w.mu.Unlock()
	close(w.resumed)
	w.resumed = make(chan struct{})
}

// heldBack reports whether err is a fetch's refusal to take tasks (the
// queue paused, or over its rate): the script ran and took nothing.
func heldBack(err error) bool {
	var limited *taskrdb.RateLimitedError
	return errors.Is(err, taskrdb.ErrPaused) || errors.As(err, &limited)
}

// handBack gives a task taken but not started back to the queue.
func (w *worker) handBack(t *taskrdb.Fetched) {
	w.report(ended{Outcome: taskrdb.Outcome{ID: t.ID, Entry: t.Entry, Level: t.Level, Kind: taskrdb.Handback}})
}

// await waits for a slot to free; when short, at most fetchWait (on t,
// the fetcher's timer), after which the next fetch is not patient.
func (w *worker) await(ctx context.Context, short bool, patient *bool, t *time.Timer) {
	if !short {
		select {
		case <-ctx.Done():
		case <-w.freed:
		}
		return
	}
	t.Reset(fetchWait)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-w.freed:
	case <-t.C:
		*patient = false
	}
}

// readBlock bounds a blocking read that a stop cannot interrupt (see
// block.go), so a stopping worker returns soon.
const readBlock = 500 * time.Millisecond

// take fetches up to n tasks: a call whose reply was lost first (see
// fetcher), then the tasks of entries a lost blocking read left pending,
// then those ready at once in one script call, else it blocks on the ready
// streams for a while. After a blocking read that found nothing (idle) the
// script call is skipped: nothing was ready then, and whatever became ready
// since is a new entry the next blocking read returns at once; an idle
// queue costs its workers a blocking read per readBlock, not also a script.
// (A paused or rate-limited queue holds back what such a read gives: see
// the given call.)
func (w *worker) take(ctx context.Context, n int, quota []int, idle bool) ([]taskrdb.Fetched, error) {
	q := w.q
	again, recover := w.toSendAgain()
	if again != nil {
		got, err := w.sendCall(ctx, again, n, quota)
		if err != nil || len(got) > 0 {
			return got, err
		}
	}
	if recover {
		if !w.enterOwn(ctx) {
			w.setRecover()
			return nil, ctx.Err()
		}
		// Sent again after a lost reply, the call hands out the tasks its
		// first run took: they are active with this worker now, so no other
		// recovery would. The recovery stays under way until it ran (no
		// given section opens meanwhile, as while it runs).
		own := w.memoCall(w.leaveOwn, func(ctx context.Context, call string, n int, _ []int) ([]taskrdb.Fetched, error) {
			return taskrdb.FetchOwn(ctx, q.rdb, q.keys, q.worker, q.set.limits(), call, len(q.set.levels), max(n, 0))
		})
		got, err := w.sendCall(ctx, own, n, quota)
		// more may be left: when it took all it could, or the queue's rate
		// (its program's, or one set live) cut it short
		if err != nil || len(got) == n || (w.rated() && len(got) > 0) {
			w.setRecover()
		}
		if err != nil || len(got) > 0 {
			return got, err
		}
	}
	if !idle {
		read := w.memoCall(nil, func(ctx context.Context, call string, n int, quota []int) ([]taskrdb.Fetched, error) {
			if n <= 0 {
				// only what the first run took, if it ran: nothing new
				n, quota = 0, make([]int, len(q.set.levels))
			}
			return taskrdb.Fetch(ctx, q.rdb, q.keys, q.worker, q.set.limits(), call, quota, n)
		})
		got, err := w.sendCall(ctx, read, n, quota)
		if err != nil || len(got) > 0 {
			return got, err
		}
	}
	streams := make([]string, 0, len(q.set.levels))
	for l := range q.set.levels {
		streams = append(streams, q.ks.TaskStream(q.name, l))
	}
	if !w.enterGiven(ctx) {
		return nil, ctx.Err()
	}
	// Not cancelled by ctx: a read cut short could leave entries read but
	// not marked; a stop interrupts it, or the block is short (block.go).
	res, err := w.blockingRead(ctx, streams, n)
	if errors.Is(err, redis.Nil) {
		w.leaveGiven()
		return nil, nil
	}
	if err != nil {
		w.leaveGiven() // entries it read, if any, are for the recovery
		w.setRecover()
		return nil, err
	}
	var entries []taskrdb.Entry
	for _, s := range res {
		level, _ := strconv.Atoi(s.Stream[strings.LastIndexByte(s.Stream, ':')+1:])
		for _, m := range s.Messages {
			e := taskrdb.Entry{Level: level, ID: m.ID}
			if v, ok := m.Values["t"].(string); ok {
				e.Field, e.Value = "t", v
			} else if v, ok := m.Values["k"].(string); ok {
				e.Field, e.Value = "k", v
			} else {
				continue // not a task entry: the script drops it
			}
			entries = append(entries, e)
		}
	}
	if room := w.room(n); len(entries) > room {
		// The read took up to n entries per level (or, through the App's
		// reader, per stream of any queue), and the concurrency may have
		// been lowered since the n slots were reserved: the rest stay
		// pending here, taken first by the next call that may take them.
		entries = entries[:room]
		w.setRecover()
	}
	if len(entries) == 0 {
		w.leaveGiven()
		return nil, nil
	}
	// The section stays open until the given call ran: sent again after a
	// lost reply, by whichever fetcher, it is still these entries' call.
	var once sync.Once
	var given fetchCall = func(ctx context.Context, _ int, _ []int) ([]taskrdb.Fetched, error) {
		got, err := taskrdb.FetchGiven(ctx, q.rdb, q.keys, q.worker, q.set.limits(), entries)
		if heldBack(err) || err == nil && len(got) < len(entries) && w.rated() {
			// Paused since the read, or over the queue's rate (its
			// program's, or one set live): entries stay pending here, taken
			// first by the next call that may take them. So too when this
			// is the call sent again after its reply was lost.
			w.setRecover()
		}
		if !lostReply(err) {
			once.Do(w.leaveGiven)
		}
		return got, err
	}
	return w.sendCall(context.WithoutCancel(ctx), given, n, quota)
}

// quotas splits n fetches over the priority levels: all to the first
// level for strict priorities (the script fills from the next levels when
// a level runs short), else in proportion to the weights, slot by slot with
// a smooth weighted round robin, so the shares hold exactly over any run of
// fetches, however small each is. w.mu is held.
func (w *worker) quotas(n int) []int {
	levels := w.q.set.levels
	out := make([]int, len(levels))
	if w.q.set.strict || len(out) == 1 {
		out[0] = n
		return out
	}
	if w.rr == nil {
		w.rr = make([]int, len(levels))
	}
	total := 0
	for _, l := range levels {
		total += l.Weight
	}
	for range n {
		best := 0
		for i, l := range levels {
			w.rr[i] += l.Weight
			if w.rr[i] > w.rr[best] {
				best = i
			}
		}
		w.rr[best] -= total
		out[best]++
	}
	return out
}

// start runs f's handler on its own goroutine.
func (w *worker) start(runCtx context.Context, f *taskrdb.Fetched) {
	timeout := f.Timeout
	if timeout <= 0 {
		timeout = w.q.set.timeout
	}
	tctx, cancel := context.WithCancelCause(runCtx)
	tctx, cancelTimeout := context.WithTimeoutCause(tctx, timeout, ErrTimeout)
	r := &running{f: f, cancel: cancel}
	w.mu.Lock()
	w.active[f.ID] = r
	w.mu.Unlock()
	w.working.Add(1)
	go func() {
		defer w.working.Done()
		growStack()
		began := time.Now()
		res, err := w.call(tctx, f)
		took := time.Since(began)
		cause := context.Cause(tctx)
		cancelTimeout()
		cancel(nil)
		// Active, so touched, until the completer has its outcome: one that
		// waits for room (the completer failing) is not reclaimed meanwhile,
		// and its slot stays taken, so no more tasks are fetched than can
		// be recorded.
		w.report(ended{Outcome: w.outcome(f, res, err, cause), attempt: f.Attempt, took: took})
		w.mu.Lock()
		if w.active[f.ID] == r {
			delete(w.active, f.ID)
		}
		w.mu.Unlock()
		w.signal()
	}()
}

// call runs the handler, turning a panic into an error.
func (w *worker) call(ctx context.Context, f *taskrdb.Fetched) (res []byte, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("task handler panicked: %v\n%s", r, debug.Stack())
		}
	}()
	return w.s.run(ctx, f)
}

// outcome decides what becomes of a task after a run.
func (w *worker) outcome(f *taskrdb.Fetched, res []byte, err error, cause error) taskrdb.Outcome {
	o := taskrdb.Outcome{ID: f.ID, Entry: f.Entry, Level: f.Level}
	switch {
	case err == nil:
		o.Kind, o.Data = taskrdb.OK, res
		return o
	case errors.Is(cause, errStopping):
		o.Kind = taskrdb.Handback
		return o
	case errors.Is(cause, ErrCancelled):
		o.Kind, o.Data = taskrdb.Cancelled, []byte("cancelled")
		return o
	case errors.Is(err, ErrExecNotReady):
		o.Kind = taskrdb.Handback // not run: the handler had no process for it
		return o
	}
	if sz := (*SnoozeError)(nil); errors.As(err, &sz) {
		o.Kind, o.Delay = taskrdb.Snooze, sz.After
		return o
	}
	switch {
	case errors.Is(cause, ErrTimeout):
		err = fmt.Errorf("%w after %s: %w", ErrTimeout, f.Timeout, err)
	}
	o.Data = []byte(err.Error())
	switch {
	case errors.Is(err, ErrSkipRetry):
		o.Kind = taskrdb.Fail
	case f.Attempt > f.MaxRetry:
		o.Kind = taskrdb.Dead
	default:
		o.Kind, o.Delay = taskrdb.Retry, w.q.set.retryDelay(f.Attempt, err)
	}
	return o
}

// completeBatch is how many outcomes one script call records.
const completeBatch = 128

// outcomeBuffer is how many outcomes a worker holds for its completer;
// recordWait is the first wait before a failed batch is recorded again.
const (
	outcomeBuffer = 4096
	recordWait    = 200 * time.Millisecond
)

// complete records outcomes until quit is closed and done drained:
// whatever arrived while the last round trip was under way goes in the
// next one. A batch that fails with an error that passes (Redis
// unreachable, restarting, at maxmemory) is tried again with a backoff
// until the queue's visibility timeout has passed since its first failure:
// by then the leader reclaims the tasks, which run again (recording them
// stays harmless: a late success is kept). Any other failure is tried six
// times, so that a mistake does not hold the outcomes after it up. While
// the worker stops (stop: Run's context ended) a batch is tried six times
// at least and until the grace period has passed since the stop (as the
// handlers are waited for), at most stopRecordWait apart: the stop ends a
// wait under way, and an unreachable Redis holds the stop up by the grace
// period and about 3s a batch at most.
//
// The completer never takes w.mu: handlers wait for room on done holding
// no lock (report), so a stretch of failures with done full stops nothing
// but the handlers that finish meanwhile.
func (w *worker) complete(stop context.Context) {
	q := w.q
	ctx := context.WithoutCancel(stop)
	base := cmp.Or(q.set.recordWait, recordWait)
	var timer *time.Timer // the waits', made at the first
	var stopAt time.Time  // when the completer saw the stop
	var batch []ended     // reused: one completer
	for {
		o, ok := w.nextOutcome()
		if !ok {
			return
		}
		clear(batch) // the last batch's results
		batch = append(batch[:0], o)
	drain:
		for len(batch) < 16*completeBatch {
			select {
			case o := <-w.done:
				batch = append(batch, o)
			default:
				break drain
			}
		}
		var failed time.Time // the batch's first failure
		for try := 0; ; try++ {
			err := w.record(ctx, batch)
			if err == nil {
				break
			}
			if failed.IsZero() {
				failed = time.Now()
			}
			// Only a failure that passes (Redis unreachable, restarting, at
			// maxmemory) is worth the wait; one that names a mistake (a
			// permission the Redis user lacks) is not.
			passing := streamcore.IsTransient(err) || strings.HasPrefix(err.Error(), "OOM ")
			stopping := stop.Err() != nil
			if stopping && stopAt.IsZero() {
				stopAt = time.Now()
			}
			late := stopping && time.Since(stopAt) >= q.set.grace
			if try >= 5 && (!passing || late) || time.Since(failed) >= q.set.visibility {
				q.log.Error("task outcomes lost: the tasks run again when reclaimed", "tasks", len(batch), "error", err)
				break
			}
			wait := min(time.Duration(try+1)*base, 10*base)
			if stopping {
				wait = min(wait, stopRecordWait)
			}
			q.log.Warn("recording task outcomes failed", "error", err, "retry_in", wait)
			if timer == nil {
				timer = time.NewTimer(wait)
				defer timer.Stop()
			} else {
				timer.Reset(wait)
			}
			var stopped <-chan struct{} // a stop during the wait ends it
			if !stopping {
				stopped = stop.Done()
			}
			select {
			case <-timer.C:
			case <-stopped:
				timer.Stop()
			}
		}
	}
}

// stopRecordWait bounds the waits between tries of a batch of outcomes
// while the worker stops.
const stopRecordWait = 500 * time.Millisecond

// nextOutcome returns the next outcome for the completer; false once quit
// is closed and done drained.
func (w *worker) nextOutcome() (ended, bool) {
	select {
	case o := <-w.done:
		return o, true
	case <-w.quit:
		select {
		case o := <-w.done:
			return o, true
		default:
			return ended{}, false
		}
	}
}

// ended is the outcome of a run, with what the hooks report of it.
type ended struct {
	taskrdb.Outcome
	attempt int
	took    time.Duration // the handler's run
}

// record runs finish.lua for batch on one pipeline, then reports the
// outcomes recorded to the queue's hooks.
func (w *worker) record(ctx context.Context, batch []ended) error {
	q := w.q
	outs := w.outs[:0] // reused: one completer
	for _, e := range batch {
		outs = append(outs, e.Outcome)
	}
	defer func() { clear(outs); w.outs = outs[:0] }()
	var lastErr error
	for try := 0; try < 2; try++ {
		pipe := q.rdb.Pipeline()
		var cmds []*redis.Cmd
		for i := 0; i < len(outs); i += completeBatch {
			cmds = append(cmds, taskrdb.FinishCmd(ctx, pipe, q.keys, q.worker, q.set.deadMax, q.set.deadAge, outs[i:min(i+completeBatch, len(outs))]))
		}
		_, lastErr = pipe.Exec(ctx)
		if lastErr == nil {
			w.hook(batch, cmds)
			return nil
		}
		if !taskrdb.IsNoScript(lastErr) {
			return lastErr
		}
		// A restarted server: nothing ran; load and run again.
		if err := taskrdb.Load(ctx, q.rdb); err != nil {
			return err
		}
	}
	return lastErr
}

// hook reports the outcomes of batch that the finish.lua calls cmds
// recorded (completeBatch outcomes per call) to the queue's hooks.
func (w *worker) hook(batch []ended, cmds []*redis.Cmd) {
	if len(w.q.hooks) == 0 {
		return
	}
	for c, cmd := range cmds {
		states, _ := cmd.StringSlice()
		for i, st := range states {
			o := outcomeOf(st)
			if o == "" || c*completeBatch+i >= len(batch) {
				continue
			}
			e := batch[c*completeBatch+i]
			for _, h := range w.q.hooks {
				h.OnTaskRun(w.q.name, o, e.attempt, e.took)
			}
		}
	}
}

// touch keeps the entries of running tasks from looking idle to the
// leader's reclaimer, cancels running tasks whose cancellation was missed on
// the channel, and applies concurrency changes.
func (w *worker) touch(ctx context.Context) {
	q := w.q
	every := min(q.set.visibility/3, time.Second)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		w.readLimit(ctx)
		w.mu.Lock()
		byLevel := map[int][]string{}
		var runs []*running
		for _, r := range w.active {
			byLevel[r.f.Level] = append(byLevel[r.f.Level], r.f.Entry)
			runs = append(runs, r)
		}
		w.mu.Unlock()
		if len(runs) == 0 {
			continue
		}
		pipe := w.share.bg.Pipeline()
		for l, ids := range byLevel {
			pipe.XClaimJustID(ctx, &redis.XClaimArgs{
				Stream: q.ks.TaskStream(q.name, l), Group: taskrdb.Group, Consumer: q.worker, MinIdle: 0, Messages: ids,
			})
		}
		flags := make([]*redis.StringCmd, len(runs))
		for i, r := range runs {
			flags[i] = pipe.HGet(ctx, q.ks.TaskPrefix(q.name)+r.f.ID, "c")
		}
		if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) && ctx.Err() == nil {
			q.log.Warn("touching running tasks failed", "error", err)
		}
		for i, r := range runs {
			if flags[i].Val() == "1" {
				r.cancel(ErrCancelled)
			}
		}
	}
}

// readLimit applies the concurrency set with SetConcurrency, else the
// program's, and the queue's ConcurrencyFunc, if any, and notes the rate
// set live.
func (w *worker) readLimit(ctx context.Context) {
	live, err := w.share.bg.HMGet(ctx, w.q.ks.TaskConfig(w.q.name), taskrdb.ConcurrencyField, taskrdb.RateField).Result()
	if err != nil {
		if w.q.set.concFn == nil {
			return // nothing known has changed
		}
		live = []any{nil, nil}
	} else {
		w.readLiveRate(live[1])
	}
	c, _ := live[0].(string)
	v, ok := taskrdb.ParseLiveConcurrency(c)
	if !ok {
		v = w.q.set.concurrency // none set live (or cleared): the program's
	}
	if fn := w.q.set.concFn; fn != nil {
		v = w.modified(fn, v)
	}
	m := w.q.maxConcurrency()
	w.mu.Lock()
	switch {
	case v > m && !w.capped:
		w.q.log.Warn("task concurrency above this worker's maximum: capped", "concurrency", v, "max", m)
		w.capped = true
		v = m
	case v > m:
		v = m
	default:
		w.capped = false
	}
	grew := v > w.limit
	if v != w.limit {
		w.q.log.Info("task concurrency changed", "from", w.limit, "to", v)
	}
	if v < w.limit && w.endRead != nil {
		w.endRead() // a blocking read waits for the slots reserved before
	}
	w.limit = v
	w.mu.Unlock()
	if grew {
		w.signal()
	}
}

// listen cancels running tasks whose cancellation is published, and wakes
// the fetchers of a paused queue when it is resumed, and those waiting out a
// rate window when the live rate changes.
func (w *worker) listen(ctx context.Context) {
	unsubscribe := w.share.hub.subscribe(ctx, w.q.ks.TaskCancel(w.q.name), func(payload string) {
		if payload == taskrdb.ResumeMessage {
			w.readRate(ctx) // a live rate changed, maybe: known before the fetchers wake
			w.wake()
			return
		}
		w.mu.Lock()
		r := w.active[payload]
		w.mu.Unlock()
		if r != nil {
			r.cancel(ErrCancelled)
		}
	})
	<-ctx.Done()
	unsubscribe()
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

// report hands an outcome to the completer, unless the worker gave up on
// its handlers and stopped.
//
// It holds no lock while it waits for room on done (the completer failing
// to record, with done full): the fetchers, the toucher and the stop take
// w.mu, and would all wait behind it. Run closes quit, not done, so a
// handler that returns after the stop gave up on it never sends on a
// closed channel: it reports nothing (what reaches done after the
// completer drained it is dropped with the channel). Every report of a
// worker that did not give up on its handlers comes before quit is closed
// (Run waits for the handlers and the fetchers first), so the completer,
// which drains done before it returns, records them all.
func (w *worker) report(o ended) {
	select {
	case w.done <- o:
	case <-w.quit:
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

// modified returns fn(configured), at least 1; the current limit when fn
// panics.
func (w *worker) modified(fn func(int) int, configured int) (v int) {
	w.mu.Lock()
	v = w.limit
	w.mu.Unlock()
	defer func() {
		if r := recover(); r != nil {
			w.q.log.Error("concurrency function panicked; keeping the concurrency", "panic", fmt.Sprint(r), "concurrency", v)
		}
	}()
	return max(fn(configured), 1)
}

// growStack grows the calling goroutine's stack to 16 KB at once, while it
// is shallow. A handler's goroutine starts with a small stack; decoding a
// payload (encoding/json, reflection) grows it in steps, each copying a
// deeper stack and adjusting every frame's pointers, which took a fifth of
// a worker's CPU with no-op handlers. Grown at the start, the copy is of a
// frame or two.
//
//go:noinline
func growStack() {
	var frame [stackFrame]byte
	touch(frame[:])
}

// stackFrame is a frame size whose goroutine's stack grows to 16 KB.
const stackFrame = 10 << 10

//go:noinline
func touch(b []byte) { b[len(b)-1] = 0 }

// readRate notes the rate set live (see readLiveRate).
func (w *worker) readRate(ctx context.Context) {
	v, err := w.share.bg.HGet(ctx, w.q.ks.TaskConfig(w.q.name), taskrdb.RateField).Result()
	switch {
	case err == nil:
		w.readLiveRate(v)
	case isNil(err):
		w.readLiveRate(nil)
	}
}

// readLiveRate notes whether the live settings' rate field (v, nil when
// absent) sets a limit. A limit the worker did not know of may have left
// entries a blocking read gave pending here without a recovery: one is run.
func (w *worker) readLiveRate(v any) {
	text, _ := v.(string)
	r, err := taskrdb.ParseLiveRate(text) // "" (none) does not parse
	rated := err == nil && r.N > 0
	if !w.liveRate.Swap(rated) && rated {
		w.setRecover()
	}
}
