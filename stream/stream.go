package stream

import (
	"context"
	"fmt"

	"github.com/leatdev/leat/internal/keys"
)

// Stream is a typed, partitioned stream of records of type T. Declare one with
// Declare; it is safe for concurrent use.
type Stream[T any] struct {
	core  *Core
	keyOf func(*T) ([]byte, error)
}

// Message is a record with headers, for SendMessages.
type Message[T any] struct {
	Record  T
	Headers Headers
}

// Declare declares the stream called name, of records of type T, on h (an
// *app.App or a *Catalog). The partition key is given by KeyField or KeyFunc;
// one of them is required. Declaring the same name again with the same settings
// returns an equivalent stream; with other settings it fails with ErrConflict.
// Declare does no I/O: the definition is written to the registry in Redis
// when the app starts or on the first send.
func Declare[T any](h Host, name string, opts ...Option) (*Stream[T], error) {
	if err := keys.CheckName("stream", name); err != nil {
		return nil, err
	}
	cat := h.Catalog()
	d := cat.defaults
	cfg := declConfig{partitions: d.Partitions, size: d.Size, codec: d.Codec}
	for _, o := range opts {
		if err := o.apply(&cfg); err != nil {
			return nil, fmt.Errorf("stream %q: %w", name, err)
		}
	}
	s := &Stream[T]{}
	typeName := fmt.Sprintf("%T", *new(T))
	switch {
	case cfg.keyFunc != nil && cfg.keyField != "":
		return nil, fmt.Errorf("stream %q: KeyField and KeyFunc are exclusive", name)
	case cfg.keyFunc != nil:
		fn, ok := cfg.keyFunc.(func(*T) ([]byte, error))
		if !ok {
			return nil, fmt.Errorf("stream %q: KeyFunc takes %s, the stream's records are %s", name, cfg.keyFuncFor, typeName)
		}
		s.keyOf = fn
	case cfg.keyField != "":
		fn, err := fieldKey[T](cfg.keyField, tagsOf(cfg.codec))
		if err != nil {
			return nil, fmt.Errorf("stream %q: %w", name, err)
		}
		s.keyOf = fn
	default:
		return nil, fmt.Errorf("stream %q: no partition key: use stream.KeyField or stream.KeyFunc", name)
	}
	core := &Core{
		def: Definition{
			Name:       name,
			Partitions: cfg.partitions,
			KeyField:   cfg.keyField,
			Size:       cfg.size,
			Codec:      cfg.codec.Name(),
		},
		codec:      cfg.codec,
		catalog:    cat,
		recordType: typeName,
	}
	if err := core.def.validate(); err != nil {
		return nil, err
	}
	readJSON := jsonRecordReader[T](tagsOf(cfg.codec), cfg.keyField)
	core.fromJSON = func(b []byte) (Entry, error) {
		var v T
		if err := readJSON(b, &v); err != nil {
			return Entry{}, err
		}
		e, err := s.encodeOne(&v, nil, s.core.codec.Marshal)
		if err != nil {
			return Entry{}, err
		}
		// Decode what was encoded: an entry accepted here is one the
		// stream's processors can read.
		var back T
		if err := s.core.codec.Unmarshal(e.Data, &back); err != nil {
			return Entry{}, fmt.Errorf("the record, encoded with %s, does not decode again into the stream's record type", s.core.codec.Name())
		}
		return e, nil
	}
	core, err := cat.add(core)
	if err != nil {
		return nil, err
	}
	s.core = core
	return s, nil
}

// Core returns the untyped stream underneath.
func (s *Stream[T]) Core() *Core { return s.core }

// Name returns the stream's name.
func (s *Stream[T]) Name() string { return s.core.def.Name }

// Definition returns the stream's definition.
func (s *Stream[T]) Definition() Definition { return s.core.def }

// Partition returns the partition record is routed to.
func (s *Stream[T]) Partition(record T) (int, error) {
	k, err := s.keyOf(&record)
	if err != nil {
		return 0, err
	}
	return s.core.PartitionOf(k), nil
}

// Send sends records, each to its partition, and returns their entry IDs in
// order. See SendMessages.
func (s *Stream[T]) Send(ctx context.Context, records ...T) ([]string, error) {
	return s.SendMany(ctx, records)
}

// SendMany sends records, each to its partition, and returns their entry IDs
// in order. See SendMessages.
func (s *Stream[T]) SendMany(ctx context.Context, records []T) ([]string, error) {
	entries, err := s.encodeAll(len(records), func(i int) (*T, Headers) { return &records[i], nil })
	if err != nil {
		return nil, err
	}
	return s.core.SendEntries(ctx, entries)
}

// SendMessages sends records with headers. Every record is encoded before
// anything is sent, so an encoding error (wrapped in ErrEncode) sends nothing.
// Records are appended with pipelined XADDs, the app's SendBatch per round
// trip, several round trips in flight for large sends; records of one
// partition keep their order. On a Redis error part way, the returned slice
// holds the ID of each record that was sent and "" for the others.
func (s *Stream[T]) SendMessages(ctx context.Context, msgs []Message[T]) ([]string, error) {
	entries, err := s.encodeAll(len(msgs), func(i int) (*T, Headers) { return &msgs[i].Record, msgs[i].Headers })
	if err != nil {
		return nil, err
	}
	return s.core.SendEntries(ctx, entries)
}

// encodeAll encodes n records given by at into entries, with one reused
// encoder when the codec offers one.
func (s *Stream[T]) encodeAll(n int, at func(int) (*T, Headers)) ([]Entry, error) {
	entries := make([]Entry, n)
	marshal := s.core.codec.Marshal
	if bc, ok := s.core.codec.(batchCodec); ok && n > 1 {
		b := bc.newBatch()
		defer b.close()
		marshal = b.marshal
	}
	for i := range n {
		r, h := at(i)
		e, err := s.encodeOne(r, h, marshal)
		if err != nil {
			return nil, fmt.Errorf("%w: record %d: %w", ErrEncode, i, err)
		}
		entries[i] = e
	}
	return entries, nil
}

// encodeOne keys and encodes one record with marshal.
func (s *Stream[T]) encodeOne(r *T, h Headers, marshal func(any) ([]byte, error)) (Entry, error) {
	key, err := s.keyOf(r)
	if err != nil {
		return Entry{}, err
	}
	data, err := marshal(r)
	if err != nil {
		return Entry{}, err
	}
	return Entry{Partition: s.core.PartitionOf(key), Key: key, Codec: s.core.codec.Name(), Data: data, Headers: h}, nil
}

// Decode decodes the record of a raw entry of this stream.
func (s *Stream[T]) Decode(e *Entry) (T, error) {
	var v T
	err := s.decodeInto(e, &v)
	return v, err
}

func (s *Stream[T]) decodeInto(e *Entry, v *T) error {
	c, err := s.core.Decoder(e.Codec)
	if err != nil {
		return err
	}
	if err := c.Unmarshal(e.Data, v); err != nil {
		return fmt.Errorf("decode %s entry %s: %w", e.Codec, e.ID, err)
	}
	return nil
}
