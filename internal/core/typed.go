package core

import (
	"fmt"
	"unsafe"

	"github.com/leatdev/leat/internal/rdb"
)

// Spec is what a stream declaration says; zero fields take the catalog's
// defaults.
type Spec struct {
	Partitions int
	Size       int64
	Codec      Codec
	KeyField   string
	KeyFunc    any // func(*T) ([]byte, error) for the stream's T
	KeyFuncFor string
	KeyKind    string // of KeyFunc's keys (KeyKindOf)
	WhenFull   Full
}

// Typed is a stream of records of type T: its untyped Core and how a record
// is keyed.
type Typed[T any] struct {
	Core  *Core
	keyOf func(*T) ([]byte, error)
	plan  *msgpackPlan // T's msgpack decoding without reflection; nil: the library's
}

// Declare declares the stream called name, of records of type T, in cat
// (see stream.Declare).
func Declare[T any](cat *Catalog, name string, spec Spec) (*Typed[T], error) {
	if err := rdb.CheckName("stream", name); err != nil {
		return nil, err
	}
	d := cat.defaults
	if spec.Partitions == 0 {
		spec.Partitions = d.Partitions
	}
	if spec.Size == 0 {
		spec.Size = d.Size
	}
	if spec.Codec == nil {
		spec.Codec = d.Codec
	}
	s := &Typed[T]{plan: newMsgpackPlan[T]()}
	typeName := fmt.Sprintf("%T", *new(T))
	switch {
	case spec.KeyFunc != nil && spec.KeyField != "":
		return nil, fmt.Errorf("stream %q: KeyField and KeyFunc are exclusive", name)
	case spec.KeyFunc != nil:
		fn, ok := spec.KeyFunc.(func(*T) ([]byte, error))
		if !ok {
			return nil, fmt.Errorf("stream %q: KeyFunc takes %s, the stream's records are %s", name, spec.KeyFuncFor, typeName)
		}
		s.keyOf = fn
	case spec.KeyField != "":
		fn, err := fieldKey[T](spec.KeyField, tagsOf(spec.Codec))
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
			Partitions: spec.Partitions,
			KeyField:   spec.KeyField,
			Size:       spec.Size,
			Codec:      spec.Codec.Name(),
			WhenFull:   spec.WhenFull,
		},
		codec:      spec.Codec,
		catalog:    cat,
		recordType: typeName,
		keyKind:    spec.KeyKind,
	}
	if spec.KeyField != "" {
		core.keyKind = fieldKeyKind[T](spec.KeyField, tagsOf(spec.Codec))
	}
	if err := core.def.validate(); err != nil {
		return nil, err
	}
	record, err := recordSchema[T](spec)
	if err != nil {
		return nil, fmt.Errorf("stream %q: schema: %w", name, err)
	}
	core.schema.record = record
	readJSON := jsonRecordReader[T](tagsOf(spec.Codec), spec.KeyField)
	core.fromJSON = func(b []byte) (Entry, error) {
		var v T
		if err := readJSON(b, &v); err != nil {
			return Entry{}, err
		}
		e, err := s.encodeOne(&v, nil, func(r *T) ([]byte, error) { return s.Core.codec.Marshal(r) })
		if err != nil {
			return Entry{}, err
		}
		// Decode what was encoded: an entry accepted here is one the
		// stream's processors can read.
		var back T
		if err := s.Core.codec.Unmarshal(e.Data, &back); err != nil {
			return Entry{}, fmt.Errorf("the record, encoded with %s, does not decode again into the stream's record type", s.Core.codec.Name())
		}
		return e, nil
	}
	core.typed = s
	s.Core = core
	added, err := cat.add(core)
	if err != nil {
		return nil, err
	}
	if t, ok := added.typed.(*Typed[T]); ok && added != core {
		return t, nil // declared before with the same settings
	}
	return s, nil
}

// Lookup returns the stream called name declared in cat with records of
// type T.
func Lookup[T any](cat *Catalog, name string) (*Typed[T], error) {
	c, ok := cat.Lookup(name)
	if !ok {
		return nil, fmt.Errorf("%w: no stream %q is declared", ErrUnknownStream, name)
	}
	t, ok := c.typed.(*Typed[T])
	if !ok {
		return nil, fmt.Errorf("stream %q holds records of %s, not %T", name, c.recordType, *new(T))
	}
	return t, nil
}

// Partition returns the partition record is routed to.
func (s *Typed[T]) Partition(record *T) (int, error) {
	k, err := s.keyOf(record)
	if err != nil {
		return 0, err
	}
	return s.Core.PartitionOf(k), nil
}

// EncodeAll encodes n records given by at into entries, with one reused
// encoder when the codec offers one, or the record type's plan (see
// msgpackPlan). An error wraps ErrEncode.
func (s *Typed[T]) EncodeAll(n int, at func(int) (*T, Headers)) ([]Entry, error) {
	entries := make([]Entry, n)
	codecMarshal := s.Core.codec.Marshal
	if bc, ok := s.Core.codec.(batchCodec); ok && n > 1 {
		b := bc.newBatch(n)
		defer b.close()
		codecMarshal = b.marshal
	}
	marshal := func(r *T) ([]byte, error) { return codecMarshal(r) }
	if s.plan != nil && s.Core.codec == MsgPack {
		pb := planBatch{plan: s.plan, chunk: batchChunk(n)}
		marshal = func(r *T) ([]byte, error) {
			if data, ok := pb.encode(unsafe.Pointer(r), n); ok {
				return data, nil
			}
			return codecMarshal(r) // not UTF-8: the codec says so
		}
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
func (s *Typed[T]) encodeOne(r *T, h Headers, marshal func(*T) ([]byte, error)) (Entry, error) {
	key, err := s.keyOf(r)
	if err != nil {
		return Entry{}, err
	}
	if err := CheckHeaders(h); err != nil {
		return Entry{}, err
	}
	data, err := marshal(r)
	if err != nil {
		return Entry{}, err
	}
	return Entry{Partition: s.Core.PartitionOf(key), Key: key, Codec: s.Core.codec.Name(), Data: data, Headers: h}, nil
}

// DecodeInto decodes the record of a raw entry of this stream into v.
func (s *Typed[T]) DecodeInto(e *Entry, v *T) error {
	c, err := s.Core.Decoder(e.Codec)
	if err != nil {
		return err
	}
	if s.plan != nil && c == MsgPack {
		saved := *v
		if s.plan.decode(e.Data, unsafe.Pointer(v)) {
			return nil
		}
		*v = saved // as it was: the library decodes it, or says what is wrong
	}
	if err := c.Unmarshal(e.Data, v); err != nil {
		return fmt.Errorf("decode %s entry %s: %w", e.Codec, e.ID, err)
	}
	return nil
}
