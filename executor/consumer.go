package executor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime/debug"
	"slices"
	"time"

	"github.com/leatdev/leat/internal/core"
)

// idleBackoff is the pause before calling a processor again when its last
// call returned without taking any event, so a processor that returns at
// once does not spin.
const idleBackoff = 50 * time.Millisecond

// PanicError is a panic recovered from a processor, with its stack.
type PanicError struct {
	Value any
	Stack []byte
}

func (e *PanicError) Error() string { return fmt.Sprintf("processor panic: %v\n%s", e.Value, e.Stack) }

// consume calls the processor over the partition until the partition stops,
// applying retries and the failure policy. It runs on its own goroutine.
func (p *partition) consume() {
	defer p.settle()
	e := p.e
	if p.held {
		p.park()
		return
	}
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
			retryable = !errors.Is(err, ErrSkipRetry)
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
			err = &PanicError{Value: r, Stack: debug.Stack()}
		}
	}()
	return p.e.handler(p.ctx(), p)
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
	if len(failing) == 0 && (policy == Ignore || policy == DeadLetter) {
		// Nothing to skip: the processor failed outside any event.
		log.Error("processor failed before taking an event; calling it again")
		p.sleep(e.opts.Retry.Backoff)
		return true
	}
	switch policy {
	case Ignore:
		log.Warn("processor failed; event ignored")
		p.dropFailing(failing)
		return true
	case DeadLetter:
		if err := e.deadLetter(p, failing, cause); err != nil {
			// Not acknowledged: the events are offered again.
			log.Error("dead-letter write failed", "dlq_error", err)
			p.sleep(e.opts.Retry.Backoff)
			return true
		}
		log.Warn("processor failed; events dead-lettered")
		p.dropFailing(failing)
		return true
	case Quarantine:
		log.Error("processor failed; partition quarantined")
		e.report(p, Quarantine, failing, cause)
		p.park()
		return false
	default:
		// The report, written before the lock is released, keeps the
		// workers already running from taking the failure over one after
		// the other (see Executor.prepare).
		log.Error("processor failed; halting the worker")
		e.report(p, Halt, failing, cause)
		e.halt(p.n, fmt.Errorf("%w: processor %q, partition %d: %w", ErrHalted, e.processor, p.n, cause))
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
func (e *Executor) report(p *partition, policy Policy, failing []core.Delivery, cause error) {
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
	if policy == Quarantine {
		e.obs.Quarantined(e.stream.Name(), e.processor, p.n, cause)
	}
}
