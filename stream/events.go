package stream

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"time"

	"github.com/leatdev/leat/internal/core"
	"github.com/redis/go-redis/v9"
)

// ErrBatchConfig is reported when a processor asks for batches with a size
// below 1 or a negative wait. A worker that meets it stops with this error.
var ErrBatchConfig = errors.New("stream: invalid batch settings")

// ErrTrimmed marks an entry that was delivered but removed from its stream
// (by MAXLEN retention or XDEL) before it was acknowledged. It goes through
// the processor's failure policy like any entry that cannot be processed.
var ErrTrimmed = core.ErrTrimmed

// ErrNotOwner is returned by Events.Fenced when this worker no longer holds
// the partition with the lock acquisition its events came from: the write
// was not applied. The processor should return (its context is ending too).
var ErrNotOwner = core.ErrNotOwner

// Event is one record of a partition, as a processor sees it.
type Event[T any] struct {
	Record    T
	ID        string
	Partition int
	Key       []byte
	Headers   Headers
	// Deliveries counts deliveries of this entry, this one included.
	Deliveries int64

	ctx context.Context
}

// Context returns the context the processor's middleware handed this event
// (or its batch) to the loop body with: it carries a Timeout's deadline
// and a Tracing span. Without middleware it is the processor call's
// context. Use it for the I/O of the loop body.
func (e *Event[T]) Context() context.Context {
	if e.ctx == nil {
		return context.Background()
	}
	return e.ctx
}

// Redelivered reports whether the entry was handed out before, to this or
// another worker, without being acknowledged.
func (e *Event[T]) Redelivered() bool { return e.Deliveries > 1 }

// Events is the sequence of events of one partition handed to a processor
// call. Range over All, Records or Batches. An event (or a batch) is
// acknowledged when the loop body that received it finishes and asks for
// the next one; leaving the loop with break, return or a panic leaves it
// unacknowledged, and a processor error then applies the failure policy to
// it. The sequences end when the partition's work on this worker ends.
//
// An Events value belongs to the processor call it was given to and is used
// from that call's goroutine only (each partition has its own): do not range
// over it, or call its methods, from other goroutines.
type Events[T any] struct {
	feed   core.Feed
	stream *Stream[T]
	ctx    context.Context
	around *core.AroundFeed // the processor's middleware, if any
}

// newEvents returns the events of feed, decoded as records of s, for the
// processor call with context ctx.
func newEvents[T any](ctx context.Context, feed core.Feed, s *Stream[T]) *Events[T] {
	ev := &Events[T]{feed: feed, stream: s, ctx: ctx}
	ev.around, _ = feed.(*core.AroundFeed)
	return ev
}

func (ev *Events[T]) decode(d *core.Delivery) (*Event[T], error) {
	if d.Err != nil {
		return nil, d.Err
	}
	e := &Event[T]{ID: d.ID, Partition: d.Partition, Key: d.Key, Headers: Headers(d.Headers), Deliveries: d.Deliveries, ctx: ev.ctx}
	if err := ev.stream.t.DecodeInto(&d.Entry, &e.Record); err != nil {
		return nil, err
	}
	return e, nil
}

// Token returns the fencing token of this processor call's hold on the
// partition. Every acquisition of a partition's lock gets a token larger
// than any earlier one, so a token orders the owners of a partition in
// time: a store outside Redis that keeps the highest token it has seen with
// the data and refuses a write carrying a lower one (compare-and-set) can
// never be overwritten by an owner that paused past its lock expiry and
// resumed. Tokens are not consecutive.
func (ev *Events[T]) Token() int64 { return ev.feed.Token() }

// Fenced applies fn's Redis commands atomically, in one MULTI/EXEC
// transaction, and only if this worker still holds the partition with the
// lock acquisition these events came from (WATCH on the lock, then a check
// of its value). Otherwise nothing is applied and it returns ErrNotOwner
// (the partition's work is ending: return). It also returns an error
// matching ErrNotOwner when trust in the lock ended before or during the
// call (ctx, the processor's context, ended with it); the transaction then
// ran only if the lock still held this acquisition's value when Redis
// executed it. An owner that paused past its
// lock expiry (a long GC pause, SIGSTOP) and resumed therefore cannot write
// over its successor. Commands are queued on pipe; their replies are read
// after Fenced returns nil. On Redis Cluster every key written must share
// the partition's hash slot: name them with LocalKey.
func (ev *Events[T]) Fenced(ctx context.Context, fn func(pipe redis.Pipeliner) error) error {
	return ev.feed.Fenced(ctx, fn)
}

// LocalKey returns a Redis key named name in the hash slot of this
// partition, under the app's prefix (PREFIX:NAME:{APP:STREAM:N}), for state a
// processor keeps per partition and writes with Fenced on Redis Cluster.
func (ev *Events[T]) LocalKey(name string) string { return ev.feed.LocalKey(name) }

// All yields events one at a time.
func (ev *Events[T]) All() iter.Seq[*Event[T]] {
	return func(yield func(*Event[T]) bool) {
		for {
			ds := ev.feed.Next(1, 0)
			if len(ds) == 0 {
				return
			}
			e, err := ev.decode(&ds[0])
			if err != nil {
				ev.feed.Reject(ds[:1], err)
				return
			}
			if ev.around != nil {
				if !ev.around.Handle(ds[:1], []any{e.Record}, false, func(ctx context.Context, _ []core.Delivery) bool {
					e.ctx = ctx
					return yield(e)
				}) {
					return
				}
				continue
			}
			if !yield(e) {
				return
			}
			ev.feed.Done(ds[:1])
		}
	}
}

// Records yields the records of All.
func (ev *Events[T]) Records() iter.Seq[T] {
	return func(yield func(T) bool) {
		for e := range ev.All() {
			if !yield(e.Record) {
				return
			}
		}
	}
}

// Batches yields batches of at most n events: a batch is handed out as soon
// as it is full, or when within has passed since its first event arrived.
// A batch succeeds or fails as a unit. A batch still gathering when the
// partition is released or the worker stops is not handed out: its events
// stay pending for the next owner, so the wait never holds up a shutdown.
// A size below 1 or a negative wait stops the worker with ErrBatchConfig.
func (ev *Events[T]) Batches(n int, within time.Duration) iter.Seq[[]*Event[T]] {
	return func(yield func([]*Event[T]) bool) {
		if n < 1 || within < 0 {
			ev.feed.Reject(nil, fmt.Errorf("%w: Batches(%d, %s) needs a size of at least 1 and a wait of at least 0",
				ErrBatchConfig, n, within))
			return
		}
		for {
			ds := ev.feed.Next(n, within)
			if len(ds) == 0 {
				return
			}
			batch := make([]*Event[T], 0, len(ds))
			for i := range ds {
				e, err := ev.decode(&ds[i])
				if err != nil {
					// Hand out what precedes the bad entry as a batch of
					// its own, then let the policy deal with the bad one.
					if i > 0 && !ev.yieldBatch(ds[:i], batch, yield) {
						return
					}
					ev.feed.Reject(ds[i:i+1], err)
					return
				}
				batch = append(batch, e)
			}
			if !ev.yieldBatch(ds, batch, yield) {
				return
			}
		}
	}
}

// yieldBatch hands batch, the events of ds, to the loop body (through the
// middleware, if any) and acknowledges it. It reports whether the loop goes on.
func (ev *Events[T]) yieldBatch(ds []core.Delivery, batch []*Event[T], yield func([]*Event[T]) bool) bool {
	if ev.around == nil {
		if !yield(batch) {
			return false
		}
		ev.feed.Done(ds)
		return true
	}
	records := make([]any, len(batch))
	for i, e := range batch {
		records[i] = e.Record
	}
	return ev.around.Handle(ds, records, true, func(ctx context.Context, sub []core.Delivery) bool {
		out := batch
		if len(sub) != len(batch) { // the middleware let a subsequence through
			out = make([]*Event[T], 0, len(sub))
			j := 0
			for _, d := range sub {
				for j < len(batch) && batch[j].ID != d.ID {
					j++
				}
				if j < len(batch) {
					out = append(out, batch[j])
				}
			}
		}
		for _, e := range out {
			e.ctx = ctx
		}
		return yield(out)
	})
}

// partitionFeed implements Partition.
func (ev *Events[T]) partitionFeed() (core.Feed, *core.Core) { return ev.feed, ev.stream.t.Core }
