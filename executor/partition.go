package executor

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/leatdev/leat/internal/core"
	"github.com/leatdev/leat/internal/lease"
)

// errLockLost is the cause of a partition's context when its lock was lost
// or could no longer be trusted.
var errLockLost = errors.New("executor: partition lock lost")

// errReleased is the cause of a partition's context when the grace period of
// a release ran out.
var errReleased = errors.New("executor: partition released")

// partition is one partition owned (or being acquired) by an executor. Its
// goroutine, run by the executor, acquires the lock, runs the refresher and
// the consumer, and on release drains, acks and unlocks.
//
// The consumer goroutine is the only user of the fields marked "consumer".
type partition struct {
	e       *Executor
	n       int
	key     string // partition stream
	lockKey string
	log     *slog.Logger

	buf chan core.Delivery // filled by the fetcher only

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

	// consumer
	pending   []core.Delivery // handed out (or taken from buf) and not done
	handed    int             // pending[:handed] were given to the processor, with their Deliveries
	pendBuf   []core.Delivery // the start of pending's memory
	out       []core.Delivery // what Next returned last; reused
	handedAt  time.Time       // when Next returned it, read only with processed hooks
	rejected  []core.Delivery
	rejectErr error
	halted    bool // a rejection ends the current processor call
	consumed  int  // deliveries handed out during the current call
	attempts  int  // failed attempts at the head of pending
	attemptID string
	transient transient // transient failures at the head of pending

	// consumer: tables (see tables.go)
	staged      []core.TableWrite            // staged by the loop body, sealed by its Done
	stagedAt    map[tableKey]int             // index in staged of each table's key
	sealed      []sealedDone                 // the Done calls of pending[:sealedN], in order
	sealedLast  map[tableKey]core.TableWrite // the last sealed write of each key
	sealedN     int                          // pending[:sealedN] are done, their writes sealed, awaiting the commit
	sealedSince time.Time                    // when the first of them was done
	tableCache  map[tableKey]tableValue
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

// Next implements core.Feed.
func (p *partition) Next(n int, within time.Duration) []core.Delivery {
	if p.halted || p.stopped() {
		return nil
	}
	if rest := p.pending[p.sealedN:]; len(rest) > 0 {
		// Left over from an interrupted or failed call: offered again, in
		// place, so order holds.
		return p.handOut(rest[:min(n, len(rest))])
	}
	if p.sealedN > 0 && len(p.buf) == 0 && !p.flush() {
		return nil // nothing to go on with at once: the done ones are committed first
	}
	var first core.Delivery
	select {
	case first = <-p.buf: // buffered: no wait, so no select over the stops
	default:
		select {
		case first = <-p.buf:
		case <-p.stop:
			return nil
		case <-p.ctx().Done():
			return nil
		}
	}
	before := len(p.buf) + 1
	p.pending = append(p.pending, first)
	if n > 1 {
		p.gather(n, within)
	}
	if p.sealedN == 0 {
		p.pendBuf = p.pending[:0]
	}
	p.e.fetch.drained(p, before, len(p.buf))
	if p.halted {
		return nil // the done ones were rejected while the batch gathered (gather)
	}
	return p.handOut(p.pending[p.sealedN:])
}

// gather adds deliveries to pending until it holds n, taking what is
// buffered at once and waiting at most within for more.
func (p *partition) gather(n int, within time.Duration) {
	var timeout <-chan time.Time
	for len(p.pending)-p.sealedN < n {
		select {
		case d := <-p.buf:
			p.pending = append(p.pending, d)
			continue
		default:
		}
		if within <= 0 {
			return
		}
		if p.sealedN > 0 && !p.flush() {
			return // the batch waits: the done ones are committed first
		}
		if timeout == nil {
			t := time.NewTimer(within)
			defer t.Stop()
			timeout = t.C
		}
		select {
		case d := <-p.buf:
			p.pending = append(p.pending, d)
		case <-timeout:
			return
		case <-p.stop:
			return
		case <-p.ctx().Done():
			return
		}
	}
}

// handOut returns a copy of ds for the processor, or nil when the lock can
// no longer be trusted (the deliveries stay pending). The copy's memory is
// reused by the next call: Events is done with a result before it asks for
// the next one.
//
// ds is the head of pending. Deliveries counts the times the processor was
// given an entry: those given before (pending[:handed]) count one more, the
// others were counted when they were read.
func (p *partition) handOut(ds []core.Delivery) []core.Delivery {
	if p.stopping() { // reads the clock: exact even right after a freeze
		return nil
	}
	// ds starts after the sealed deliveries, which were handed out
	for i := range min(max(p.handed-p.sealedN, 0), len(ds)) {
		ds[i].Deliveries++
	}
	p.handed = max(p.handed, p.sealedN+len(ds))
	p.consumed += len(ds)
	if len(p.e.obs.processed) > 0 { // only the hooks read the time
		p.handedAt = time.Now()
	}
	p.out = append(p.out[:0], ds...)
	return p.out
}

// take removes ds, which must be the head of pending, from pending.
func (p *partition) take(ds []core.Delivery) {
	if len(ds) > len(p.pending) || (len(ds) > 0 && p.pending[0].ID != ds[0].ID) {
		panic(fmt.Sprintf("executor: deliveries %v are not the head of pending", ids(ds)))
	}
	clear(p.pending[:len(ds)])
	p.pending = p.pending[len(ds):]
	p.handed = max(p.handed-len(ds), 0)
	if len(p.pending) == 0 {
		p.pending = p.pendBuf[:0] // reuse the memory from its start
	}
}

// Done implements core.Feed: the deliveries are acknowledged. With table
// writes staged, or deliveries done before them awaiting their commit, they
// are sealed and committed with those (see seal).
func (p *partition) Done(ds []core.Delivery) {
	if len(p.staged) > 0 || p.sealedN > 0 {
		if !p.seal(ds) {
			return
		}
	} else {
		p.take(ds)
		p.ack(ds)
	}
	if len(p.e.obs.processed) > 0 {
		p.e.obs.Processed(p.e.stream.Name(), p.e.processor, p.n, len(ds), time.Since(p.handedAt))
	}
}

func (p *partition) ack(ds []core.Delivery) {
	if len(ds) == 0 {
		return
	}
	p.e.acks.addDeliveries(p.key, ds)
}

// Reject implements core.Feed.
//
// The events handed out after ds were not given to the processor: the call
// ends at the rejection.
func (p *partition) Reject(ds []core.Delivery, err error) {
	if p.sealedN > 0 && !p.flush() {
		return // the partition's work ends, or the done ones were rejected
	}
	p.take(ds)
	p.handed = 0
	p.rejected = append(p.rejected[:0], ds...)
	p.rejectErr = err
	p.halted = true
}

func ids(ds []core.Delivery) []string {
	out := make([]string, len(ds))
	for i := range ds {
		out[i] = ds[i].ID
	}
	return out
}
