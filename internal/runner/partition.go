package runner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/leatdev/leat/executor"
	"github.com/leatdev/leat/internal/core"
	"github.com/leatdev/leat/internal/lease"
)

// errLockLost is the cause of a partition's context when its lock was lost
// or could no longer be trusted.
var errLockLost = errors.New("executor: partition lock lost")

// errReleased is the cause of a partition's context when the grace period of
// a release ran out.
var errReleased = errors.New("executor: partition released")

// partition is one partition owned (or being acquired) by an executor.
// Its goroutine (runPartition) acquires the lock, starts the consumer and
// the fetcher's reads of it, and shuts it down in the order written above
// runPartition. Three goroutines use it: its own, the consumer's and the
// fetcher's; the comments say whose each field is.
type partition struct {
	// Set by newPartition, read-only after.
	e       *Executor
	n       int
	key     string // partition stream
	lockKey string
	log     *slog.Logger

	buf chan core.Delivery // filled by the fetcher only, emptied by the consumer

	// life ends on a hard stop: lock lost, grace exceeded, worker gone.
	life   context.Context
	cancel context.CancelCauseFunc
	// lock and trust are set once the lock is acquired, before the consumer
	// and the fetcher see the partition. trust, derived from life, ends
	// when life does or when the lock can no longer be trusted: it is the
	// processor's context.
	lock  *lease.Lock
	trust *lease.Trust

	stopOnce sync.Once
	stop     chan struct{} // soft stop: no more events handed out
	freed    chan struct{} // the previous holder announced it released the lock

	held     bool            // halted by another worker: owned, not processed (see prepare)
	leftover []core.Delivery // read but never buffered when fetching stopped; guarded by the fetcher's mu

	// The consumer's (consumer.go): only the consumer goroutine uses them.
	pending   []core.Delivery // handed out (or taken from buf) and not done
	handed    int             // pending[:handed] were given to the processor, with their Deliveries
	pendBuf   []core.Delivery // the start of pending's memory
	out       []core.Delivery // what Next returned last; reused
	handedAt  time.Time       // when Next returned it, read only with processed hooks
	rejected  []core.Delivery // what Reject was given during the current call
	rejectErr error           // and why
	halted    bool            // a rejection ends the current processor call
	consumed  int             // deliveries handed out during the current call
	attempts  int             // failed attempts at the head of pending
	attemptID string          // the entry those attempts were made on
	transient transient       // transient failures at the head of pending

	// The tables' (tables.go): the consumer goroutine's too.
	staged      []core.TableWrite            // staged by the loop body, sealed by its Done
	stagedAt    map[tableKey]int             // index in staged of each table's key
	sealed      []sealedDone                 // the Done calls of pending[:sealedN], in order
	sealedLast  map[tableKey]core.TableWrite // the last sealed write of each key
	sealedN     int                          // pending[:sealedN] are done, their writes sealed, awaiting the commit
	sealedSince time.Time                    // when the first of them was done
	outputs     []core.Output                // records staged for other streams (outputs.go), sealed with the writes
	commitSeq   uint64                       // commits of outputs made, naming each (outputs.go)
	tableCache  map[tableKey]tableValue      // values read or committed while the lock is held
}

func (e *Executor) newPartition(ctx context.Context, n int) *partition {
	life, cancel := context.WithCancelCause(ctx)
	return &partition{
		e:       e,
		n:       n,
		key:     e.stream.PartitionKey(n),
		lockKey: e.keys.Lock(e.stream.Name(), e.processor, n),
		log:     e.log.With("partition", n),
		buf:     make(chan core.Delivery, e.opts.Prefetch),
		life:    life,
		cancel:  cancel,
		stop:    make(chan struct{}),
		freed:   make(chan struct{}, 1),
	}
}

// runPartition acquires p, processes it until it is released or lost, and
// then shuts it down, in this order:
//
//  1. stop fetching (fetcher.remove): nothing more enters p's buffer;
//  2. drain the consumer (drain): its call in flight ends, within Grace;
//     on its way out, unless the lock was lost, it takes back what was
//     never handed out, sets the delivery counters of what stays pending
//     and acknowledges what is done (settle);
//  3. ack: the refreshes stop and the acknowledgements are flushed;
//  4. release the lock, unless it was lost, and announce it, so the next
//     owner takes the partition without waiting for the lock to expire.
//
// A processor that ignores its cancelled context is abandoned at step 2:
// the shutdown ends there, and the lock expires by itself.
func (e *Executor) runPartition(p *partition) {
	defer func() {
		e.mu.Lock()
		if e.owned[p.n] == p {
			delete(e.owned, p.n)
		}
		delete(e.ready, p.n)
		e.mu.Unlock()
		p.cancel(errReleased)
		e.poke() // the assignment may want it again (lost lock, quick re-assignment)
	}()
	if !e.acquire(p) {
		return
	}
	done := make(chan struct{})
	go func() { defer close(done); p.consume() }()
	if !p.held {
		e.fetch.add(p)
	}
	e.mu.Lock()
	e.ready[p.n] = true
	e.mu.Unlock()
	p.log.Info("partition acquired", "token", p.lock.Token())

	// Wait for a release (soft stop) or a loss (hard stop).
	select {
	case <-p.stop:
	case <-p.trust.Done():
	}
	e.fetch.remove(p) // 1. stop fetching
	lost := p.lost()
	if lost {
		p.log.Warn("partition lock lost", "cause", context.Cause(p.trust))
		e.obs.LockLost(e.stream.Name(), e.processor, p.n)
	}
	if !e.drain(p, done, lost) { // 2. drain the consumer
		return // abandoned: the lock expires by itself
	}
	e.mu.Lock()
	delete(e.ready, p.n) // 3. ack, with no more refreshes
	e.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := e.acks.flush(ctx); err != nil {
		p.log.Warn("ack before release failed", "error", err)
	}
	if lost {
		return
	}
	err := e.release(ctx, p) // 4. release the lock
	switch {
	case err == nil:
		e.stats.released.Add(1)
		// The next owner, if it already tried, waits for this notice (sent
		// in time of its own: a release on Cluster may have waited for a
		// failover).
		actx, acancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer acancel()
		if err := e.announce(actx, noticeReleased, e.id, int64(p.n)); err != nil {
			p.log.Warn("release notice failed; the next owner takes the partition at its next attempt", "error", err)
		}
	case !errors.Is(err, lease.ErrNotHeld):
		p.log.Warn("lock release failed; it expires by itself", "error", err)
	}
	p.log.Info("partition released")
}

// drain waits for p's consumer (done) to finish its event or batch in
// flight: Grace at most, then its context is cancelled and it gets up to
// abandonAfter more. A processor still running then ignores its context: the
// executor halts with an error naming it, and drain returns false; its
// unacknowledged entries stay pending for the next owner.
func (e *Executor) drain(p *partition, done <-chan struct{}, lost bool) bool {
	grace := time.NewTimer(e.opts.Grace)
	defer grace.Stop()
	select {
	case <-done:
		return true
	case <-grace.C:
	}
	if lost {
		// Another executor may own the partition by now: a processor
		// still running ignores its context and may overlap with it.
		p.log.Error("processor still running after its partition lock was lost: it must return when its context is cancelled")
	} else {
		p.log.Warn("grace period over; cancelling the processor")
		p.cancel(errReleased)
	}
	extra := time.NewTimer(abandonAfter(e.opts))
	defer extra.Stop()
	select {
	case <-done:
		return true
	case <-extra.C:
	}
	err := fmt.Errorf("%w: processor %q, partition %d, still running %s after its context was cancelled",
		executor.ErrProcessorStuck, e.processor, p.n, e.opts.Grace+abandonAfter(e.opts))
	p.log.Error("processor abandoned: it ignores its context", "error", err)
	e.halt(p.n, err)
	return false
}

// prepare creates the consumer group if needed and clears an old quarantine
// report: the new owner tries the partition again.
//
// A partition halted by another worker is different: a worker that was
// already running when the halt happened runs the same code, and would fail
// and halt in turn, and so on across the fleet. Such a worker holds the
// partition without processing it (it is reported, like a quarantine); a
// worker started after the halt (a fix deployed) tries it again.
func (e *Executor) prepare(p *partition) error {
	ctx, cancel := context.WithTimeout(p.ctx(), 5*time.Second)
	defer cancel()
	if err := e.ensureGroup(ctx, p.key); err != nil {
		return err
	}
	b, err := e.group.Report(ctx, p.n)
	if b == nil || err != nil {
		return err
	}
	var r stopReport
	if json.Unmarshal(b, &r) != nil || r.Policy != executor.Halt.String() {
		return e.group.ClearReport(ctx, p.n)
	}
	started, err := e.startedOnServer(ctx)
	if err != nil {
		return err
	}
	if r.Time.After(started) {
		p.held = true
		p.log.Error("partition halted by a worker running the same code; holding it without processing until a worker started later takes it",
			"halted_by", r.Worker, "id", r.ID, "error", r.Error)
		return nil
	}
	return e.group.ClearReport(ctx, p.n)
}

func (p *partition) softStop() { p.stopOnce.Do(func() { close(p.stop) }) }

func (p *partition) stopping() bool {
	select {
	case <-p.stop:
		return true
	default:
		return p.ctx().Err() != nil
	}
}

// stopped is stopping without reading the clock: an expired trust that
// nothing noticed yet does not count. Next returns early with it; handOut,
// which hands events out, checks stopping.
func (p *partition) stopped() bool {
	select {
	case <-p.stop:
		return true
	default:
		if p.trust != nil {
			return p.trust.Ended()
		}
		return p.life.Err() != nil
	}
}

// ctx is the partition's work context: its trust once the lock is held,
// its life before.
func (p *partition) ctx() context.Context {
	if p.trust != nil {
		return p.trust
	}
	return p.life
}

// lost reports whether the partition's work ended because its lock was
// lost or could no longer be trusted.
func (p *partition) lost() bool {
	ctx := p.ctx()
	if ctx.Err() == nil { // a Trust's Err reads the clock: exact right after a stall
		return false
	}
	cause := context.Cause(ctx)
	return errors.Is(cause, errLockLost) || errors.Is(cause, lease.ErrTrustExpired)
}

// Partition implements core.Deliveries.
func (p *partition) Partition() int { return p.n }

// Processor implements core.Deliveries.
func (p *partition) Processor() string { return p.e.processor }

// LocalKey implements core.Deliveries.
func (p *partition) LocalKey(name string) string {
	return p.e.keys.Local(name, p.e.stream.Name(), p.n)
}
