package stream

import (
	"context"
	"fmt"

	"github.com/leatdev/leat/internal/core"
)

// Stream is a typed, partitioned stream of records of type T. Declare one with
// Declare; it is safe for concurrent use.
type Stream[T any] struct {
	t *core.Typed[T]
}

// Message is a record with headers, for SendMessages.
type Message[T any] struct {
	Record  T
	Headers Headers
}

// A Catalog is the set of streams declared on an app, with the connection
// they send on. An *app.App has one, which makes it a Host.
type Catalog struct {
	c *core.Catalog
}

// Catalog returns c, so that a *Catalog is a Host too.
func (c *Catalog) Catalog() *Catalog { return c }

// Host is what streams are declared on: an *app.App.
type Host interface {
	Catalog() *Catalog
}

// Declare declares the stream called name, of records of type T, on h (an
// *app.App). The partition key is given by KeyField or KeyFunc; one of them
// is required. Declaring the same name again with the same settings returns
// an equivalent stream; with other settings it fails with ErrConflict.
// Declare does no I/O: the definition is written to the registry in Redis
// when the app starts or on the first send.
func Declare[T any](h Host, name string, opts ...Option) (*Stream[T], error) {
	var spec core.Spec
	for _, o := range opts {
		if err := o.apply(&spec); err != nil {
			return nil, fmt.Errorf("stream %q: %w", name, err)
		}
	}
	cat := h.Catalog()
	if cat == nil || cat.c == nil {
		return nil, fmt.Errorf("stream %q: the host has no catalog", name)
	}
	t, err := core.Declare[T](cat.c, name, spec)
	if err != nil {
		return nil, err
	}
	return &Stream[T]{t: t}, nil
}

// Lookup returns the stream called name already declared on h, with
// records of type T: the same stream Declare returned.
func Lookup[T any](h Host, name string) (*Stream[T], error) {
	cat := h.Catalog()
	if cat == nil || cat.c == nil {
		return nil, fmt.Errorf("stream %q: the host has no catalog", name)
	}
	t, err := core.Lookup[T](cat.c, name)
	if err != nil {
		return nil, err
	}
	return &Stream[T]{t: t}, nil
}

// Name returns the stream's name.
func (s *Stream[T]) Name() string { return s.t.Core.Name() }

// Definition returns the stream's definition.
func (s *Stream[T]) Definition() Definition { return definitionOf(s.t.Core.Definition()) }

// Partition returns the partition record is routed to.
func (s *Stream[T]) Partition(record T) (int, error) { return s.t.Partition(&record) }

// Send sends records, each to its partition, and returns their entry IDs in
// order. See SendMessages.
func (s *Stream[T]) Send(ctx context.Context, records ...T) ([]string, error) {
	return s.SendMany(ctx, records)
}

// SendMany sends records, each to its partition, and returns their entry IDs
// in order. See SendMessages.
func (s *Stream[T]) SendMany(ctx context.Context, records []T) ([]string, error) {
	entries, err := s.t.EncodeAll(len(records), func(i int) (*T, core.Headers) { return &records[i], nil })
	if err != nil {
		return nil, err
	}
	return s.t.Core.SendEntries(ctx, entries)
}

// SendMessages sends records with headers. Every record is encoded before
// anything is sent, so an encoding error (wrapped in ErrEncode) sends nothing.
// Records are appended with pipelined XADDs, the app's SendBatch per round
// trip, several round trips in flight for large sends; records of one
// partition keep their order. On a Redis error part way, the returned slice
// holds the ID of each record that was sent and "" for the others.
//
// Sends of a few records made at once from several goroutines share round
// trips (on streams that trim, not on WhenFull ones): while two are under way, the sends that arrive wait and go
// together on one pipeline when one of those ends, each answered with its
// own IDs and errors, as alone. A send whose ctx ends while it waits
// returns ctx's error and sends nothing.
func (s *Stream[T]) SendMessages(ctx context.Context, msgs []Message[T]) ([]string, error) {
	entries, err := s.t.EncodeAll(len(msgs), func(i int) (*T, core.Headers) {
		return &msgs[i].Record, core.Headers(msgs[i].Headers)
	})
	if err != nil {
		return nil, err
	}
	return s.t.Core.SendEntries(ctx, entries)
}
