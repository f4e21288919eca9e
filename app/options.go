package app

import (
	"errors"
	"time"

	"github.com/leatdev/leat/executor"
)

// A ProcessorOption overrides one of the app's processor defaults
// (Config.Processing) for one processor; see Process. Unlike the Config
// fields, where zero means the default, an option sets exactly the value
// given, zero included: Grace(0) is no grace period, Retries(0) no retries.
type ProcessorOption interface {
	apply(*executor.Options)
}

type optionFunc func(*executor.Options)

func (f optionFunc) apply(o *executor.Options) { f(o) }

// LockExpiry sets the TTL of the processor's partition locks: a crashed
// worker's partitions move after at most about this long. At least 300ms.
func LockExpiry(d time.Duration) ProcessorOption {
	return optionFunc(func(o *executor.Options) { o.LockExpiry = d })
}

// Prefetch sets how many events are buffered per partition, which is also
// about the most one read of a partition takes. At least 1. Default:
// executor.PrefetchFor the stream's partitions (8,192 events spread over
// them, 100 to 1,000 each: 512 for 16 partitions). It counts events, not
// bytes: with records of tens of kilobytes or more, set it lower.
func Prefetch(n int) ProcessorOption {
	return optionFunc(func(o *executor.Options) { o.Prefetch = n })
}

// ReadBlock sets how long a read waits for new entries before it looks
// again. At least 1ms; an idle worker's blocking read waits at most half
// the client's ReadTimeout (go-redis's socket deadline for it).
func ReadBlock(d time.Duration) ProcessorOption {
	return optionFunc(func(o *executor.Options) { o.ReadBlock = d })
}

// Grace sets how long in-flight work may take to finish when a partition is
// released or the worker stops, before its context is cancelled.
func Grace(d time.Duration) ProcessorOption {
	return optionFunc(func(o *executor.Options) { o.Grace = d })
}

// JoinDelay sets a wait after joining before the first rebalance.
func JoinDelay(d time.Duration) ProcessorOption {
	return optionFunc(func(o *executor.Options) { o.JoinDelay = d })
}

// StartFrom sets where the processor's consumer group starts when it is
// created: Earliest or Latest.
func StartFrom(p Position) ProcessorOption {
	return optionFunc(func(o *executor.Options) { o.Start = p })
}

// OnError sets the failure policy: Halt, Quarantine, Ignore or DeadLetter.
func OnError(p Policy) ProcessorOption {
	return optionFunc(func(o *executor.Options) { o.OnError = p })
}

// Retries sets how many times a failing event (or batch) is retried in
// place, in order, before the failure policy applies.
func Retries(n int) ProcessorOption {
	return optionFunc(func(o *executor.Options) { o.Retry.Attempts = n })
}

// Backoff sets the wait before the first retry and its cap: it doubles from
// first up to max, with jitter.
func Backoff(first, max time.Duration) ProcessorOption {
	return optionFunc(func(o *executor.Options) { o.Retry.Backoff, o.Retry.MaxBackoff = first, max })
}

// TransientRetries sets how long a processor call that failed with a
// transient Redis error (stream.IsTransient) is retried in place, from the
// first failure of an event, and the backoff between tries: it doubles from
// first up to max, with jitter. By default 30s, from 100ms up to 5s; see
// executor.TransientRetry.
func TransientRetries(total, first, max time.Duration) ProcessorOption {
	return optionFunc(func(o *executor.Options) {
		o.Transient = executor.TransientRetry{For: total, Backoff: first, MaxBackoff: max}
	})
}

// NoTransientRetries turns off the retries of transient Redis errors: they
// count like any other failure, for Retries and the failure policy.
func NoTransientRetries() ProcessorOption {
	return optionFunc(func(o *executor.Options) { o.Transient.Off = true })
}

// Policy says what happens when a processor fails on an event after its
// retries; see executor.Policy.
type Policy = executor.Policy

// Failure policies (see executor.Policy).
const (
	Halt       = executor.Halt
	Quarantine = executor.Quarantine
	Ignore     = executor.Ignore
	DeadLetter = executor.DeadLetter
)

// Position is where a new consumer group starts; see executor.Position.
type Position = executor.Position

// Start positions.
const (
	Earliest = executor.Earliest
	Latest   = executor.Latest
)

// Processor outcomes, matched with errors.Is (see package executor).
var (
	// ErrHalted: Run stopped because a processor's failure policy halted
	// the worker; the error wraps the processor's error too.
	ErrHalted = executor.ErrHalted
	// ErrSkipRetry: an error from SkipRetry.
	ErrSkipRetry = executor.ErrSkipRetry
	// ErrProcessorStuck: a processor did not return after its context was
	// cancelled at the end of the grace period (and a bounded extra wait).
	ErrProcessorStuck = executor.ErrProcessorStuck
)

// SkipRetry marks a processor's error as not worth retrying: the failure
// policy applies at once.
func SkipRetry(err error) error { return executor.SkipRetry(err) }

// RetryAfter asks for the next retry in place after d rather than the
// backoff; it counts as an attempt.
func RetryAfter(d time.Duration, err error) error { return executor.RetryAfter(d, err) }

// processorOptions returns the options of a processor of a stream of the
// given partitions: the app's defaults (Config.Processing, zero fields
// taking the package defaults, Prefetch by the partitions), then opts
// applied in order, validated. An option's zero is its value, so
// Prefetch(0) is refused.
func (a *App) processorOptions(opts []ProcessorOption, partitions int) (executor.Options, error) {
	o := a.cfg.Processing.Merge(executor.DefaultOptions())
	if o.Prefetch == 0 {
		o.Prefetch = executor.PrefetchFor(partitions)
	}
	for _, opt := range opts {
		if opt != nil {
			opt.apply(&o)
		}
	}
	err := o.Validate()
	if o.Prefetch == 0 {
		err = errors.Join(err, errors.New("prefetch 0 must be at least 1"))
	}
	return o, err
}
