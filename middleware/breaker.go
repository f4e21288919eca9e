package middleware

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"time"

	"github.com/leatdev/leat/internal/core"
)

// BreakerOptions configure CircuitBreaker. Zero fields take the defaults.
type BreakerOptions struct {
	// Failures is how many consecutive failures open the breaker. Default 5.
	Failures int
	// CoolDown is how long the breaker stays open before it lets one
	// trial through. Default 10s.
	CoolDown time.Duration
	// PerPartition keeps a breaker per partition of each processor rather
	// than one per processor.
	PerPartition bool
	// Counts says which errors count as failures. Default: all but those
	// of a cancelled context.
	Counts func(error) bool
	// OnChange, when set, is called when a breaker opens (open true) or
	// closes, with the stream, processor and (PerPartition) partition, or
	// -1.
	OnChange func(stream, processor string, partition int, open bool)
}

// CircuitBreaker returns a middleware that stops calling a failing
// dependency: after Failures consecutive failures of a processor (or of a
// partition) the breaker opens, and the handling of its next events waits,
// holding the partition in place, until CoolDown has passed; then one event
// goes through as a trial: its success closes the breaker, its failure
// opens it again. Waiting, rather than failing, keeps the partition's order
// and acknowledgements as they are and burns no retries; the wait ends
// with the context (a shutdown or a rebalance). The failures themselves go
// to the retries and the failure policy as usual.
func CircuitBreaker(o BreakerOptions) Middleware {
	if o.Failures <= 0 {
		o.Failures = 5
	}
	if o.CoolDown <= 0 {
		o.CoolDown = 10 * time.Second
	}
	if o.Counts == nil {
		o.Counts = func(err error) bool {
			return !errors.Is(err, context.Canceled) && !errors.Is(err, core.ErrLoopLeft)
		}
	}
	var (
		mu       sync.Mutex
		breakers = map[string]*breaker{}
	)
	get := func(m *Message) *breaker {
		k, part := m.Stream+"/"+m.Processor, -1
		if o.PerPartition {
			k, part = k+"/"+strconv.Itoa(m.Partition), m.Partition
		}
		mu.Lock()
		defer mu.Unlock()
		b := breakers[k]
		if b == nil {
			b = &breaker{o: &o, stream: m.Stream, processor: m.Processor, partition: part, changed: make(chan struct{})}
			breakers[k] = b
		}
		return b
	}
	return func(next Handler) Handler {
		return func(ctx context.Context, m *Message) error {
			b := get(m)
			trial, err := b.enter(ctx)
			if err != nil {
				return err
			}
			err = next(ctx, m)
			b.leave(trial, err)
			return err
		}
	}
}

// breaker is the state of one circuit.
type breaker struct {
	o                 *BreakerOptions
	stream, processor string
	partition         int

	mu        sync.Mutex
	fails     int
	openUntil time.Time     // zero when closed
	trial     bool          // a trial is under way (half-open)
	changed   chan struct{} // closed and replaced on every state change
}

// enter waits until the handler may run, and reports whether it runs as
// the trial of a half-open breaker.
func (b *breaker) enter(ctx context.Context) (trial bool, err error) {
	for {
		b.mu.Lock()
		if b.openUntil.IsZero() {
			b.mu.Unlock()
			return false, nil
		}
		wait := time.Until(b.openUntil)
		if wait <= 0 && !b.trial {
			b.trial = true
			b.mu.Unlock()
			return true, nil
		}
		ch := b.changed
		b.mu.Unlock()
		if err := waitFor(ctx, wait, ch); err != nil {
			return false, err
		}
	}
}

// leave records the result of a handler.
func (b *breaker) leave(trial bool, err error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if trial {
		b.trial = false
	}
	open := !b.openUntil.IsZero()
	switch {
	case err == nil:
		b.fails = 0
		if open {
			b.openUntil = time.Time{}
			b.notify(false)
		}
	case !b.o.Counts(err):
		if trial {
			b.wake() // let another trial go
		}
	case trial || b.fails+1 >= b.o.Failures:
		b.fails++
		b.openUntil = time.Now().Add(b.o.CoolDown)
		if !open || trial {
			b.notify(true)
		}
	default:
		b.fails++
	}
}

// wake wakes the waiters. Called with b.mu held.
func (b *breaker) wake() {
	close(b.changed)
	b.changed = make(chan struct{})
}

// notify wakes the waiters and reports a change to OnChange. Called with
// b.mu held.
func (b *breaker) notify(open bool) {
	b.wake()
	if b.o.OnChange != nil {
		b.o.OnChange(b.stream, b.processor, b.partition, open)
	}
}

// waitFor waits for d (forever when d <= 0), for ch to close, or for ctx
// to end, which it reports.
func waitFor(ctx context.Context, d time.Duration, ch <-chan struct{}) error {
	var timer <-chan time.Time
	if d > 0 {
		t := time.NewTimer(d)
		defer t.Stop()
		timer = t.C
	}
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-ch:
	case <-timer:
	}
	return nil
}
