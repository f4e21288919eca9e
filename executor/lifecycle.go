package executor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/leatdev/leat/internal/lease"
)

// runPartition acquires p, processes it until it is released or lost, and
// then drains, acknowledges and unlocks it.
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
	e.fetch.remove(p)
	lost := p.lost()
	if lost {
		p.log.Warn("partition lock lost", "cause", context.Cause(p.trust))
		e.obs.LockLost(e.stream.Name(), e.processor, p.n)
	}
	if !e.drain(p, done, lost) {
		return // abandoned: the lock expires by itself
	}
	e.mu.Lock()
	delete(e.ready, p.n) // no more refreshes
	e.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := e.acks.flush(ctx); err != nil {
		p.log.Warn("ack before release failed", "error", err)
	}
	if lost {
		return
	}
	err := e.release(ctx, p)
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
	extra := time.NewTimer(e.opts.abandonAfter())
	defer extra.Stop()
	select {
	case <-done:
		return true
	case <-extra.C:
	}
	err := fmt.Errorf("%w: processor %q, partition %d, still running %s after its context was cancelled",
		ErrProcessorStuck, e.processor, p.n, e.opts.Grace+e.opts.abandonAfter())
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
	if json.Unmarshal(b, &r) != nil || r.Policy != Halt.String() {
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
