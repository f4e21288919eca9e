package executor

import (
	"errors"
	"fmt"
	"time"
)

// Policy says what happens when a processor fails on an event (or batch)
// after its retries, or meets an entry it cannot be given (undecodable,
// trimmed from the stream).
type Policy int

const (
	// Halt stops the worker gracefully; app.Run returns the error. The
	// failing event stays unacknowledged and is delivered again after a
	// restart. The default.
	Halt Policy = iota + 1
	// Quarantine stops the failing partition on this worker: it stays owned
	// (so nobody else processes it out of order), is reported in Redis and
	// by inspect, and every other partition goes on.
	Quarantine
	// Ignore acknowledges the failing event and goes on.
	Ignore
	// DeadLetter writes the failing event, its stream, partition, ID, the
	// error and the time to the processor's dead-letter stream, then
	// acknowledges it and goes on.
	DeadLetter
)

func (p Policy) String() string {
	switch p {
	case Halt:
		return "halt"
	case Quarantine:
		return "quarantine"
	case Ignore:
		return "ignore"
	case DeadLetter:
		return "dead-letter"
	}
	return fmt.Sprintf("Policy(%d)", int(p))
}

// ParsePolicy parses "halt", "quarantine", "ignore" or "dead-letter".
func ParsePolicy(s string) (Policy, error) {
	for _, p := range []Policy{Halt, Quarantine, Ignore, DeadLetter} {
		if p.String() == s {
			return p, nil
		}
	}
	return 0, fmt.Errorf("unknown failure policy %q (want halt, quarantine, ignore or dead-letter)", s)
}

// Position is where a new consumer group starts reading a partition.
type Position int

const (
	// Earliest starts with the oldest entry still in the partition. The default.
	Earliest Position = iota + 1
	// Latest starts with entries added after the group was created.
	Latest
)

// Retry retries a failing event in place, so order holds, before the failure
// policy applies. Backoff doubles from Backoff up to MaxBackoff, with jitter.
type Retry struct {
	// Attempts is the number of retries after the first failure. Default 0.
	Attempts int
	// Backoff is the wait before the first retry. Default 100ms.
	Backoff time.Duration
	// MaxBackoff caps the wait between retries. Default 10s.
	MaxBackoff time.Duration
}

// TransientRetry retries in place, so order holds, a processor call that
// failed with a transient Redis error (stream.IsTransient: a connection
// refused or reset, a timeout, LOADING, READONLY, CLUSTERDOWN, TRYAGAIN,
// MASTERDOWN, MOVED, ...), as a failover or a restart of Redis causes, for
// up to For, before the ordinary retries (Retry) and the failure policy
// apply. The wait doubles from Backoff up to MaxBackoff, with jitter. These
// retries do not count as Retry attempts, and stop when the partition
// stops or its lock can no longer be trusted (the events are then
// delivered again to the partition's next owner). An error marked with
// SkipRetry is not retried.
type TransientRetry struct {
	// For is how long the failures of one event (or batch, or a call that
	// failed before taking an event) may be retried, counted from the
	// first failure. Default 30s.
	For time.Duration
	// Backoff is the wait before the first retry. Default 100ms.
	Backoff time.Duration
	// MaxBackoff caps the wait between retries. Default 5s.
	MaxBackoff time.Duration
	// Off turns these retries off: a transient error is then a failure
	// like any other. Default false.
	Off bool
}

// Defaults of TransientRetry.
const (
	DefaultTransientFor        = 30 * time.Second
	DefaultTransientBackoff    = 100 * time.Millisecond
	DefaultTransientMaxBackoff = 5 * time.Second
)

// Options configure a processor's runtime. The zero value of each field means
// its default; app.Config holds app-wide defaults for every processor.
type Options struct {
	// LockExpiry is the TTL of partition locks and heartbeats. A crashed
	// worker's partitions move after at most this long. Default 10s.
	LockExpiry time.Duration
	// Prefetch is the number of events buffered per partition. The fetcher
	// reads a partition again when its buffer is half empty, so it is also
	// about the most a read of the partition takes. Default PrefetchFor the
	// stream's partitions: 512 for 16 partitions. It counts events, not
	// bytes: with records of tens of kilobytes or more, set it lower.
	Prefetch int
	// ReadBlock is how long a read waits for new entries before it checks
	// again, at most half the client's ReadTimeout. Default 2s.
	ReadBlock time.Duration
	// Grace is how long in-flight work may take to finish when a partition
	// is released or the worker stops. Zero is no grace period; the app
	// layer defaults it to 10s (DefaultGrace).
	Grace time.Duration
	// JoinDelay is a wait after joining before the first rebalance, so that
	// workers starting together cause one rebalance. Default 0.
	JoinDelay time.Duration
	// Start is where a new consumer group starts. Default Earliest.
	Start Position
	// OnError is the failure policy. Default Halt.
	OnError Policy
	// Retry retries failures in place before OnError applies.
	Retry Retry
	// Transient retries failures caused by transient Redis errors in place,
	// before Retry and OnError apply. On by default (see TransientRetry).
	Transient TransientRetry
}

// Defaults.
const (
	DefaultLockExpiry = 10 * time.Second
	DefaultReadBlock  = 2 * time.Second
	DefaultGrace      = 10 * time.Second
)

// The default Prefetch (PrefetchFor): PrefetchBudget events per executor,
// spread over the stream's partitions, at least MinDefaultPrefetch and at
// most MaxDefaultPrefetch per partition.
const (
	PrefetchBudget     = 8192
	MinDefaultPrefetch = 100
	MaxDefaultPrefetch = 1000
)

// PrefetchFor returns the default Prefetch of a stream of n partitions:
// 1000 up to 8 partitions, 512 for 16, 256 for 32, 100 from 82 on. A
// partition is read again once its buffer is half empty, the reads of all
// the partitions due sharing one round trip: the buffers set how much a
// round trip carries and how often the fetcher makes one, and so the rate
// of a backlog, while the budget bounds what they hold in memory, but for
// the floor of 100 per partition that streams of many partitions keep (see
// docs/benchmarks.md).
func PrefetchFor(n int) int {
	return min(MaxDefaultPrefetch, max(MinDefaultPrefetch, PrefetchBudget/max(n, 1)))
}

// Merge returns o with each zero field taken from defaults.
func (o Options) Merge(defaults Options) Options {
	if o.LockExpiry == 0 {
		o.LockExpiry = defaults.LockExpiry
	}
	if o.Prefetch == 0 {
		o.Prefetch = defaults.Prefetch
	}
	if o.ReadBlock == 0 {
		o.ReadBlock = defaults.ReadBlock
	}
	if o.Grace == 0 {
		o.Grace = defaults.Grace
	}
	if o.JoinDelay == 0 {
		o.JoinDelay = defaults.JoinDelay
	}
	if o.Start == 0 {
		o.Start = defaults.Start
	}
	if o.OnError == 0 {
		o.OnError = defaults.OnError
	}
	if o.Retry.Attempts == 0 {
		o.Retry.Attempts = defaults.Retry.Attempts
	}
	if o.Retry.Backoff == 0 {
		o.Retry.Backoff = defaults.Retry.Backoff
	}
	if o.Retry.MaxBackoff == 0 {
		o.Retry.MaxBackoff = defaults.Retry.MaxBackoff
	}
	if o.Transient.For == 0 {
		o.Transient.For = defaults.Transient.For
	}
	if o.Transient.Backoff == 0 {
		o.Transient.Backoff = defaults.Transient.Backoff
	}
	if o.Transient.MaxBackoff == 0 {
		o.Transient.MaxBackoff = defaults.Transient.MaxBackoff
	}
	if !o.Transient.Off {
		o.Transient.Off = defaults.Transient.Off
	}
	return o
}

// DefaultOptions returns the package defaults of every option; Prefetch is
// zero, PrefetchFor the stream's partitions.
func DefaultOptions() Options {
	return Options{
		LockExpiry: DefaultLockExpiry,
		ReadBlock:  DefaultReadBlock,
		Grace:      DefaultGrace,
		Start:      Earliest,
		OnError:    Halt,
		Retry:      Retry{Backoff: 100 * time.Millisecond, MaxBackoff: 10 * time.Second},
		Transient: TransientRetry{
			For: DefaultTransientFor, Backoff: DefaultTransientBackoff, MaxBackoff: DefaultTransientMaxBackoff,
		},
	}
}

// WithDefaults fills the zero fields for which zero is not a valid value
// (all but Grace, JoinDelay, Retry.Attempts, and Prefetch, which New sets
// by the stream's partitions) with the package defaults, and validates o. Merge with DefaultOptions first to take every default.
func (o Options) WithDefaults() (Options, error) {
	d := DefaultOptions()
	d.Grace = 0
	o = o.Merge(d)
	return o, o.Validate()
}

// Validate reports every option that cannot work, in one error.
func (o Options) Validate() error {
	var errs []error
	if o.LockExpiry < 300*time.Millisecond {
		errs = append(errs, fmt.Errorf("lock expiry %s is below 300ms", o.LockExpiry))
	}
	if o.Prefetch < 0 { // zero: PrefetchFor the stream's partitions
		errs = append(errs, fmt.Errorf("prefetch %d must be at least 1", o.Prefetch))
	}
	if o.ReadBlock < time.Millisecond {
		errs = append(errs, fmt.Errorf("read block %s is below 1ms", o.ReadBlock))
	}
	if o.Grace < 0 {
		errs = append(errs, fmt.Errorf("grace period %s is negative", o.Grace))
	}
	if o.JoinDelay < 0 {
		errs = append(errs, fmt.Errorf("join delay %s is negative", o.JoinDelay))
	}
	if o.Start != Earliest && o.Start != Latest {
		errs = append(errs, fmt.Errorf("unknown start position %d", o.Start))
	}
	if o.OnError < Halt || o.OnError > DeadLetter {
		errs = append(errs, fmt.Errorf("unknown failure policy %d", o.OnError))
	}
	if o.Retry.Attempts < 0 {
		errs = append(errs, fmt.Errorf("retries %d: want 0 or more", o.Retry.Attempts))
	}
	if o.Retry.Backoff < 0 || o.Retry.MaxBackoff < o.Retry.Backoff {
		errs = append(errs, fmt.Errorf("backoff %s up to %s: want a first wait of 0 or more and a maximum at least as long", o.Retry.Backoff, o.Retry.MaxBackoff))
	}
	if o.Transient.For < 0 {
		errs = append(errs, fmt.Errorf("transient retries for %s: want a positive duration (Off turns them off)", o.Transient.For))
	}
	if o.Transient.Backoff < 0 || o.Transient.MaxBackoff < o.Transient.Backoff || (o.Transient.MaxBackoff == 0 && o.Transient.For > 0) {
		errs = append(errs, fmt.Errorf("transient retry backoff %s up to %s: want a first wait of 0 or more and a positive maximum at least as long",
			o.Transient.Backoff, o.Transient.MaxBackoff))
	}
	return errors.Join(errs...)
}

// RetentionWarning is the fraction of a partition's size (XADD MAXLEN ~)
// that a processor's lag may reach before the executor warns that
// retention may soon trim unread entries.
const RetentionWarning = 0.8
