package core

import (
	"context"
	"errors"
	"time"

	"github.com/redis/go-redis/v9"
)

// ErrTrimmed marks an entry that was delivered but removed from its stream
// (by MAXLEN retention or XDEL) before it was acknowledged. It goes through
// the processor's failure policy like any entry that cannot be processed.
var ErrTrimmed = errors.New("stream: entry trimmed before it was processed")

// ErrNotOwner is returned by Events.Fenced when this worker no longer holds
// the partition with the lock acquisition its events came from: the write
// was not applied. The processor should return (its context is ending too).
var ErrNotOwner = errors.New("stream: partition no longer owned by this worker; write fenced off")

// Delivery is one raw entry handed to a processor by the runtime.
type Delivery struct {
	Entry
	// Deliveries counts how many times a processor was given the entry,
	// this time included: 1 on first delivery, more after a retry, a
	// release or a crash. Entries read but never given to a processor do
	// not count, except those a crashed worker had read (Redis' delivery
	// counter cannot tell them apart).
	Deliveries int64
	// Err is set for an entry that cannot be processed (ErrTrimmed, a
	// malformed entry); the processor never sees it and the failure policy
	// applies to it.
	Err error
}

// Feed is what the runtime (internal/runner) hands one processor call for
// one partition: its deliveries, and the staging of its table writes, which
// commit with their acknowledgement. Processors use it through
// stream.Events.
type Feed interface {
	Deliveries
	Stager
}

// Deliveries hands out the entries of one partition and takes back their
// outcome.
type Deliveries interface {
	// Next blocks until at least one delivery is available and returns up
	// to n of them, waiting at most within for the batch to fill. It
	// returns nil when the partition's work ends (shutdown, rebalance or
	// lock loss).
	Next(n int, within time.Duration) []Delivery
	// Done acknowledges deliveries whose processing completed.
	Done(ds []Delivery)
	// Reject hands deliveries that cannot be given to the processor, with
	// the reason, to the failure policy. With no deliveries, err is a
	// configuration error that stops the worker.
	Reject(ds []Delivery, err error)
	// Token is the fencing token of the lock acquisition the deliveries
	// come from.
	Token() int64
	// Fenced runs fn's commands in a transaction that Redis applies only
	// while the lock acquisition is still held, or returns ErrNotOwner.
	Fenced(ctx context.Context, fn func(pipe redis.Pipeliner) error) error
	// LocalKey names a key in the partition's hash slot.
	LocalKey(name string) string

	// Partition is the partition's number; Processor the processor's name.
	Partition() int
	Processor() string
}

// Stager stages a processor call's writes to its tables (and to string keys
// of the partition's slot) until the acknowledgement they commit with.
type Stager interface {
	// Stage records a write to one of the processor's tables. Staged
	// writes are applied by the next Done, atomically with the
	// acknowledgement of its deliveries and only while the lock acquisition
	// is held; until then nothing is written.
	Stage(w TableWrite)
	// Staged returns the last write staged for key of table, if any.
	Staged(table, key string) (TableWrite, bool)
	// Discard drops the staged writes: the loop body that made them failed,
	// or is run again.
	Discard()
	// ReadTable returns the value of key in table as committed.
	ReadTable(ctx context.Context, table, key string) ([]byte, bool, error)
	// StageKey stages a write of value to the string key (in the
	// partition's hash slot: LocalKey), expiring after ttl, applied as
	// Stage's are: with the next acknowledgements (middleware records).
	// StagedKey reports whether such a write of key is staged or awaits its
	// commit.
	StageKey(key string, value []byte, ttl time.Duration)
	StagedKey(key string) bool
	// StageOutput stages a record for a stream, written as Stage's writes
	// are applied: with the next acknowledgement, in the same step, only
	// while the lock acquisition is held; dropped by Discard.
	StageOutput(o Output)
}

// TableWrite is a write to a processor's table: Value for Key, or the key
// deleted.
type TableWrite struct {
	Table  string
	Key    string
	Value  []byte
	Delete bool
	// TTL, with Table "", makes the write one of a string key (StageKey):
	// Key set to Value, expiring after TTL.
	TTL time.Duration
}
