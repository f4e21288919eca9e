package runner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime/debug"
	"slices"
	"time"

	"github.com/leatdev/leat/executor"
	"github.com/leatdev/leat/internal/core"
	"github.com/leatdev/leat/internal/rdb"
)

// The consumer: one goroutine per partition (consume), started by
// runPartition once the lock is held. It calls the processor over the
// partition until the partition stops, handing it the events of the
// fetcher's buffer through core.Feed (Next, Done, Reject), and applies
// retries and the failure policy. On its way out (settle) it takes back
// what it never handed out and acknowledges what is done, before
// runPartition releases the lock.

// idleBackoff is the pause before calling a processor again when its last
// call returned without taking any event, so a processor that returns at
// once does not spin.
const idleBackoff = 50 * time.Millisecond

// consume calls the processor over the partition until the partition stops,
// applying retries and the failure policy. It runs on its own goroutine.
func (p *partition) consume() {
	defer p.settle()
	e := p.e
	if p.held {
		p.park()
		return
	}
	p.relayLeft() // Cluster: outputs a former owner committed and did not relay
	for !p.stopping() {
		p.consumed, p.halted, p.rejected, p.rejectErr = 0, false, p.rejected[:0], nil
		p.Discard() // table writes of a call that failed or left its loop
		err := p.call()
		p.flush() // what the call did before it ended (a failure: not the failing one)
		if p.stopping() {
			return
		}
		var failing []core.Delivery
		retryable := true
		switch {
		case p.halted && len(p.rejected) == 0:
			// A configuration error found by the events (stream.ErrBatchConfig).
			e.halt(p.n, fmt.Errorf("processor %q: %w", e.processor, p.rejectErr))
			p.park()
			return
		case p.halted:
			failing, err, retryable = p.rejected, p.rejectErr, false
		case err != nil:
			failing = slices.Clone(p.pending) // everything handed out and not done
			retryable = !errors.Is(err, executor.ErrSkipRetry)
		}
		if err == nil {
			if p.consumed > 0 {
				p.transient = transient{}
			} else {
				p.sleep(idleBackoff)
			}
			continue
		}
		e.obs.Failed(e.stream.Name(), e.processor, p.n, err)
		headID := ""
		if len(failing) > 0 {
			headID = failing[0].ID
		}
		if retryable && p.retryTransient(headID, err) {
			continue
		}
		if retryable && len(failing) > 0 && p.retry(failing[0].ID, err) {
			p.log.Info("processor failed; retrying", "error", err, "id", failing[0].ID, "attempt", p.attempts)
			continue
		}
		p.attempts, p.attemptID, p.transient = 0, "", transient{}
		if !p.applyPolicy(failing, err) {
			return
		}
	}
}

// call runs the processor once, turning a panic into a *PanicError.
func (p *partition) call() (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = &executor.PanicError{Value: r, Stack: debug.Stack()}
		}
	}()
	return p.e.handler(p.ctx(), p)
}

// Next implements core.Deliveries.
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

// Done implements core.Deliveries: the deliveries are acknowledged. With table
// writes staged, or deliveries done before them awaiting their commit, they
// are sealed and committed with those (see seal).
func (p *partition) Done(ds []core.Delivery) {
	if len(p.staged) > 0 || len(p.outputs) > 0 || p.sealedN > 0 {
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

// Reject implements core.Deliveries.
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

// retry counts a failed attempt on the entry id and waits for the backoff
// (or the delay err asks for with RetryAfter). It returns false when the
// retries are used up.
func (p *partition) retry(id string, err error) bool {
	r := p.e.opts.Retry
	if p.attemptID != id {
		p.attemptID, p.attempts = id, 0
	}
	after, asked, decided := retryDelay(err)
	if p.attempts >= r.Attempts && !decided {
		return false
	}
	p.attempts++
	d := backoff(r.Backoff, r.MaxBackoff, p.attempts)
	if asked {
		d = after
	}
	p.sleep(d)
	return true
}

// sleep waits for d or until the partition stops.
func (p *partition) sleep(d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-p.stop:
	case <-p.ctx().Done():
	}
}

// park waits until the partition stops: used after halt and quarantine.
func (p *partition) park() {
	select {
	case <-p.stop:
	case <-p.ctx().Done():
	}
}

// applyPolicy applies the failure policy to failing (possibly empty when the
// processor failed before taking an event). It returns false when the
// consumer must stop.
func (p *partition) applyPolicy(failing []core.Delivery, cause error) bool {
	e := p.e
	log := p.log.With("policy", e.opts.OnError.String(), "error", cause)
	if len(failing) > 0 {
		log = log.With("id", failing[0].ID, "events", len(failing))
	}
	policy := e.opts.OnError
	if len(failing) == 0 && (policy == executor.Ignore || policy == executor.DeadLetter) {
		// Nothing to skip: the processor failed outside any event.
		log.Error("processor failed before taking an event; calling it again")
		p.sleep(e.opts.Retry.Backoff)
		return true
	}
	switch policy {
	case executor.Ignore:
		log.Warn("processor failed; event ignored")
		p.dropFailing(failing)
		return true
	case executor.DeadLetter:
		if err := e.deadLetter(p, failing, cause); err != nil {
			// Not acknowledged: the events are offered again.
			log.Error("dead-letter write failed", "dlq_error", err)
			p.sleep(e.opts.Retry.Backoff)
			return true
		}
		log.Warn("processor failed; events dead-lettered")
		p.dropFailing(failing)
		return true
	case executor.Quarantine:
		log.Error("processor failed; partition quarantined")
		e.report(p, executor.Quarantine, failing, cause)
		p.park()
		return false
	default:
		// The report, written before the lock is released, keeps the
		// workers already running from taking the failure over one after
		// the other (see Executor.prepare).
		log.Error("processor failed; halting the worker")
		e.report(p, executor.Halt, failing, cause)
		e.halt(p.n, fmt.Errorf("%w: processor %q, partition %d: %w", executor.ErrHalted, e.processor, p.n, cause))
		p.park()
		return false
	}
}

// dropFailing acknowledges failing deliveries that the policy skips. Those
// still pending are removed from it first.
func (p *partition) dropFailing(failing []core.Delivery) {
	if len(p.pending) > 0 && len(failing) > 0 && p.pending[0].ID == failing[0].ID {
		p.take(p.pending[:min(len(failing), len(p.pending))])
	}
	var ack []core.Delivery
	for _, d := range failing {
		if !errors.Is(d.Err, core.ErrTrimmed) { // trimmed entries left the pending list already
			ack = append(ack, d)
		}
	}
	p.ack(ack)
}

// stopReport is what the quarantine hash records for a partition stopped by
// the Quarantine or Halt policy.
type stopReport struct {
	Policy   string    `json:"policy"`
	Executor string    `json:"executor"`
	Worker   string    `json:"worker,omitempty"`
	ID       string    `json:"id,omitempty"`
	Error    string    `json:"error"`
	Time     time.Time `json:"time"` // server time
}

// report records in Redis that policy stopped partition p, tried again for
// up to 10s while it fails with a transient error. Its time is the
// server's, the clock every executor compares it with (see prepare).
func (e *Executor) report(p *partition, policy executor.Policy, failing []core.Delivery, cause error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err := ride(ctx, func(ctx context.Context) error {
		return e.group.WriteReport(ctx, p.n, func(now time.Time) ([]byte, error) {
			r := stopReport{Policy: policy.String(), Executor: e.id, Worker: e.worker, Error: cause.Error(), Time: now.UTC()}
			if len(failing) > 0 {
				r.ID = failing[0].ID
			}
			return json.Marshal(r)
		})
	})
	if err != nil {
		p.log.Error("stop report not written", "error", err)
	}
	if policy == executor.Quarantine {
		e.obs.Quarantined(e.stream.Name(), e.processor, p.n, cause)
	}
}

// settle runs when p's consumer stops, before the lock is released: unless
// the lock was lost, it stops fetching, sets the delivery counters of what
// stays pending (see uncount), sends the acknowledgements and deletes e's
// consumer on p if it has nothing pending.
func (p *partition) settle() {
	if p.lost() {
		return
	}
	e := p.e
	ctx, cancel := context.WithTimeout(context.WithoutCancel(p.ctx()), 5*time.Second)
	defer cancel()
	p.uncount(ctx, e.fetch.unhanded(p))
	if err := e.acks.flush(ctx); err != nil {
		return // runPartition tries again; the janitor deletes the consumer later
	}
	if err := rdb.DeleteConsumersOn(ctx, e.client, p.key, e.processor, e.id).Err(); err != nil {
		p.log.Debug("consumer not deleted; the leader's janitor will", "error", err)
	}
}

// uncount sets, in Redis, the delivery counter of each entry that stays
// pending on p (pending, and unhanded: buffered and never taken) to the
// times the processor was given it: Redis counted a delivery when the entry
// was read, and knows nothing of retries in place. The next owner's claim
// then counts its own delivery on top, so Event.Redelivered is true only for
// entries a processor was really given before. After a crash this cannot
// run: entries the dead executor had read count as delivered once.
func (p *partition) uncount(ctx context.Context, unhanded []core.Delivery) {
	counts := map[string]int64{}
	add := func(d core.Delivery, given bool) {
		if d.ID == "" || errors.Is(d.Err, core.ErrTrimmed) {
			return // a trim notice, or an entry gone from the stream
		}
		n := d.Deliveries
		if !given {
			n--
		}
		counts[d.ID] = max(n, 0)
	}
	for i, d := range p.pending {
		add(d, i < p.handed)
	}
	for _, d := range unhanded {
		add(d, false)
	}
	if len(counts) == 0 || p.lock == nil {
		return
	}
	e := p.e
	if _, err := rdb.SetDeliveries(ctx, e.client, p.lockKey, p.key, p.lock.Value(), e.processor, e.id, counts); err != nil {
		p.log.Debug("delivery counters not set", "error", err)
	}
}
