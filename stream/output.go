package stream

import (
	"errors"
	"fmt"

	"github.com/leatdev/leat/internal/core"
)

// ErrOutputElsewhere is returned by an Output's methods when the stream
// was declared on an app that talks to another Redis than the processor's:
// its records could not be written in the step that acknowledges events.
var ErrOutputElsewhere = errors.New("stream: output on a stream of another Redis")

// In returns the stream as an exactly-once output of the processor call of
// events (the *Events of a processor of any stream): records sent through
// it are staged, and written when the event or batch the loop body was
// handed is acknowledged, in the same step as the acknowledgement and the
// call's table writes (Table.In), or not at all. Use it from the call's
// goroutine, like events.
//
//	out := shipments.In(events)
//	for ev := range events.All() {
//		if err := out.Send(Shipment{Order: ev.Record.ID}); err != nil {
//			return err
//		}
//	}
func (s *Stream[T]) In(events Partition) *Output[T] {
	feed, src := events.partitionFeed()
	o := &Output[T]{s: s, feed: feed}
	if src.Catalog().Client() != s.t.Core.Catalog().Client() {
		o.err = fmt.Errorf("%w: stream %q is not on the connection of processor %q of stream %q",
			ErrOutputElsewhere, s.Name(), feed.Processor(), src.Name())
	}
	return o
}

// Output is a stream opened in a processor call (Stream.In) to send records
// to exactly once: Kafka Streams' exactly-once processing, on Redis.
//
// Send and SendMessages stage the records; they are written to their
// partitions when the event or batch the loop body was handed is
// acknowledged, atomically with that acknowledgement and with the table
// writes of the same loop body, and only while the worker still holds the
// partition (the step is fenced by its lock). A loop body that fails, or
// is run again (a middleware's retry), has its records dropped; a worker
// killed, stalled past its lock expiry or cut off from Redis before the
// acknowledgement wrote nothing, and the event's next processing stages
// them again. So every acknowledged event has had its records written
// once, and an event never acknowledged none.
//
// On standalone Redis (and Sentinel) the records are added to their
// partitions by the step that acknowledges. On Redis Cluster they go to an
// outbox in the source partition's hash slot, written by that step, and
// are relayed from it at once to their partitions by a write that adds
// nothing already relayed; a worker that takes the partition over relays
// what is left. Records written to one partition from one source
// partition keep their order. See docs/exactly-once.md.
//
// Records for a stream that never trims unprocessed entries (WhenFull
// refuse or wait) wait for room: the step is tried again, with backoff,
// until the partition has room for them or the partition's work ends.
type Output[T any] struct {
	s    *Stream[T]
	feed core.Feed
	err  error
}

// Send stages records, each for its partition. Every record is encoded
// before anything is staged, so an encoding error (wrapped in ErrEncode)
// stages nothing.
func (o *Output[T]) Send(records ...T) error {
	if o.err != nil {
		return o.err
	}
	entries, err := o.s.t.EncodeAll(len(records), func(i int) (*T, core.Headers) { return &records[i], nil })
	if err != nil {
		return err
	}
	o.stage(entries)
	return nil
}

// SendMessages stages records with headers, as Send.
func (o *Output[T]) SendMessages(msgs []Message[T]) error {
	if o.err != nil {
		return o.err
	}
	entries, err := o.s.t.EncodeAll(len(msgs), func(i int) (*T, core.Headers) {
		return &msgs[i].Record, core.Headers(msgs[i].Headers)
	})
	if err != nil {
		return err
	}
	o.stage(entries)
	return nil
}

func (o *Output[T]) stage(entries []core.Entry) {
	for _, e := range entries {
		o.feed.StageOutput(core.Output{Stream: o.s.t.Core, Entry: e})
	}
}

// Stream returns the stream the output sends to.
func (o *Output[T]) Stream() *Stream[T] { return o.s }
