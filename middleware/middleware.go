package middleware

import (
	"context"

	"github.com/leatdev/leat/stream"
	"github.com/redis/go-redis/v9"
)

// Handler handles one message: one event, or one batch, of a processor.
// Returning nil acknowledges the message; an error goes to the processor's
// retries in place and failure policy, exactly as an error the processor
// returns from its loop body.
type Handler func(ctx context.Context, m *Message) error

// Middleware wraps a Handler. It may act before and after calling next,
// change the context next gets, not call next at all (the message is then
// acknowledged when it returns nil), call it with fewer entries (the loop
// body sees only those; all are acknowledged), or turn next's error into
// another one. A Middleware value is shared by every partition of every
// processor it is given to: keep its state safe for concurrent use.
type Middleware func(next Handler) Handler

// Chain returns h wrapped in mws, the first outermost: Chain(h, a, b) runs
// a, which calls b, which calls h.
func Chain(h Handler, mws ...Middleware) Handler { return wrap(h, mws) }

// wrap returns h wrapped in mws, the first outermost; nil ones are skipped.
func wrap[H any, M ~func(H) H](h H, mws []M) H {
	for i := len(mws) - 1; i >= 0; i-- {
		if mws[i] != nil {
			h = mws[i](h)
		}
	}
	return h
}

// Message is the untyped form of what a processor's loop body handles: one
// event (Entries has one element) or one batch (Batch is true).
type Message struct {
	// Stream is the stream's name; Processor the processor's.
	Stream, Processor string
	// Partition is the partition the entries come from.
	Partition int
	// Token is the fencing token of the processor's hold on the partition
	// (see stream.Events.Token).
	Token int64
	// Batch is true when the loop body ranges over Batches.
	Batch bool
	// Entries are the message's entries, in stream order.
	Entries []Entry
	// App and KeyPrefix are the app's name and Redis key prefix, and
	// Client its Redis client, for middleware that keeps state in Redis.
	App, KeyPrefix string
	Client         redis.UniversalClient
	// Fence writes to Redis only while the partition is still held by this
	// worker with the acquisition of Token (see stream.Events.Fenced). It
	// is nil for messages that come from no partition.
	Fence Fence
}

// Entry is one entry of a Message.
type Entry struct {
	// ID is the stream entry ID.
	ID string
	// Key is the partition key as sent.
	Key []byte
	// Headers are the entry's headers (trace context among them). A
	// middleware may add to them before next is called; the loop body sees
	// the same map.
	Headers stream.Headers
	// Codec names the record's encoding; Data is the encoded record.
	Codec string
	Data  []byte
	// Deliveries counts deliveries of this entry, this one included.
	Deliveries int64
	// Record is the decoded record (a T of the processor's stream).
	Record any
}

// First returns the first entry of m (a message has at least one).
func (m *Message) First() *Entry { return &m.Entries[0] }

// IDs returns the entry IDs of m.
func (m *Message) IDs() []string {
	ids := make([]string, len(m.Entries))
	for i := range m.Entries {
		ids[i] = m.Entries[i].ID
	}
	return ids
}

// Fence is the partition ownership of a Message; stream.Events implements
// the same methods.
type Fence interface {
	// Fenced applies fn's commands atomically, only while the partition is
	// still held; otherwise it returns stream.ErrNotOwner.
	Fenced(ctx context.Context, fn func(pipe redis.Pipeliner) error) error
	// LocalKey names a Redis key in the partition's hash slot.
	LocalKey(name string) string
}
