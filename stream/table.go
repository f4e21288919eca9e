package stream

import (
	"context"
	"errors"
	"fmt"

	"github.com/leatdev/leat/internal/core"
	"github.com/leatdev/leat/internal/rdb"
)

// TableDefinition is what the processor registry records of a table, as
// JSON with the field names of its tags.
type TableDefinition struct {
	// Name is the table's name.
	Name string `json:"name"`
	// Codec is the name of the codec its values are stored with.
	Codec string `json:"codec"`
	// Changes is the length of its change log per partition
	// (KeepChanges), 0 when it keeps none.
	Changes int64 `json:"changes,omitempty"`
}

// Errors of tables.
var (
	// ErrOtherPartition is returned by a Store's methods for a key that
	// belongs to another partition of the stream: a key's value lives in
	// the partition its events are routed to, where Table.Get finds it.
	ErrOtherPartition = errors.New("stream: key belongs to another partition")
	// ErrTableElsewhere is returned by a Store's methods when the table was
	// opened (Table.In) on the events of another stream or processor.
	ErrTableElsewhere = errors.New("stream: table opened outside its processor")
)

// Table is state a processor keeps per key: a value of type V for each key
// of its stream, in Redis, beside the partition the key's events go to.
// Within the processor, open it on the call's events (In): the values a
// loop body writes are applied together with the acknowledgement of the
// event or batch it was handed, in one step that only the partition's
// current owner can take. An event acknowledged has had its writes applied
// exactly once; an event not acknowledged (the body failed, the worker was
// killed, the partition was lost) has had none applied, and its next
// processing starts from the values before it: exactly-once state, with
// at-least-once processing.
//
// Declare a table with DeclareTable; read it from anywhere with Get and Scan.
type Table[V any] struct {
	stream    *core.Core
	processor string
	name      string
	codec     Codec
	changes   int64 // its change log's length (KeepChanges), 0: none
}

// A TableOption tweaks one table declaration.
type TableOption func(*tableSpec)

type tableSpec struct {
	codec   Codec
	changes int64
}

// TableCodec sets the codec values are stored with (default: MsgPack).
func TableCodec(c Codec) TableOption { return func(s *tableSpec) { s.codec = c } }

// DeclareTable declares the table called name of the processor called
// processor on stream s, holding values of type V (the type argument to
// give: DeclareTable[int64](orders, "billing", "totals")). Names are those
// of streams: letters, digits, '_', '.', '-'. Declaring it again with
// another codec fails with ErrConflict. It does no I/O: the worker records
// the processor's tables (name and codec) with the processor's definition,
// for tools (leat table).
func DeclareTable[V, T any](s *Stream[T], processor, name string, opts ...TableOption) (*Table[V], error) {
	if err := rdb.CheckName("processor", processor); err != nil {
		return nil, err
	}
	if err := rdb.CheckName("table", name); err != nil {
		return nil, err
	}
	spec := tableSpec{codec: MsgPack}
	for _, o := range opts {
		o(&spec)
	}
	if spec.codec == nil {
		return nil, fmt.Errorf("table %q: codec is nil", name)
	}
	if spec.changes < 0 || spec.changes > maxChanges {
		return nil, fmt.Errorf("table %q: KeepChanges(%d): give 1 to %d entries", name, spec.changes, maxChanges)
	}
	if err := s.t.Core.DeclareTable(processor, name, spec.codec.Name(), spec.changes); err != nil {
		return nil, err
	}
	return &Table[V]{stream: s.t.Core, processor: processor, name: name, codec: spec.codec, changes: spec.changes}, nil
}

// Name returns the table's name.
func (t *Table[V]) Name() string { return t.name }

// Get returns key's value as last applied, read from Redis with one HGET
// on the key's partition (the partition the stream routes key to), and
// whether it has one. It reads what acknowledged events wrote: a write
// staged by an event in progress is not seen.
func (t *Table[V]) Get(ctx context.Context, key string) (V, bool, error) {
	var v V
	cat := t.stream.Catalog()
	hash := cat.Keys().Table(t.stream.Name(), t.processor, t.name, t.stream.PartitionOf([]byte(key)))
	data, ok, err := rdb.TableGet(ctx, cat.Client(), hash, key)
	if err != nil {
		return v, false, fmt.Errorf("table %q: %w", t.name, err)
	}
	if !ok {
		return v, false, nil
	}
	return t.decode(key, data)
}

func (t *Table[V]) decode(key string, data []byte) (V, bool, error) {
	var v V
	if err := t.codec.Unmarshal(data, &v); err != nil {
		return v, false, fmt.Errorf("table %q: key %q: %w", t.name, key, err)
	}
	return v, true, nil
}

// Partition is what a table is opened on: the *Events of a processor call.
type Partition interface {
	partitionFeed() (core.Feed, *core.Core)
}

// In returns the table as the processor call of events sees it: reads and
// writes of the keys of its partition. Use it from the call's goroutine,
// like events.
func (t *Table[V]) In(events Partition) *Store[V] {
	feed, s := events.partitionFeed()
	st := &Store[V]{t: t, feed: feed}
	switch {
	case s != t.stream && s.Name() == t.stream.Name():
		st.err = fmt.Errorf("%w: table %q was declared on stream %q of another app: declare it on this app's stream",
			ErrTableElsewhere, t.name, s.Name())
	case s != t.stream || feed.Processor() != t.processor:
		st.err = fmt.Errorf("%w: table %q of processor %q on stream %q, opened in processor %q on stream %q",
			ErrTableElsewhere, t.name, t.processor, t.stream.Name(), feed.Processor(), s.Name())
	}
	return st
}

// Store is a table opened in a processor call (Table.In). Writes (Set,
// Delete) are staged: they are applied when the event or batch the loop
// body was handed is acknowledged, in the same step, and dropped when it
// fails or is run again (a middleware's retry); Get sees them at once.
// Writes made outside a loop body go with the next acknowledgement. A
// batch's writes are applied with the batch, in one step. While more events
// are already buffered, the acknowledgements of several events (up to 256,
// or those of 5 ms) are applied together, in one step with their writes;
// a lone event's at once.
//
// If the partition was lost (its lock expired during a stall, or another
// worker took it), nothing is applied and the events stay pending for the
// next owner; the processor's context ends as for any loss.
type Store[V any] struct {
	t    *Table[V]
	feed core.Feed
	err  error
}

func (s *Store[V]) check(key string) error {
	if s.err != nil {
		return s.err
	}
	if p := s.t.stream.PartitionOf([]byte(key)); p != s.feed.Partition() {
		return fmt.Errorf("%w: table %q: key %q is in partition %d, not %d", ErrOtherPartition, s.t.name, key, p, s.feed.Partition())
	}
	return nil
}

// Get returns key's value: the last one staged in this call, else the one
// applied (read from Redis once per acquisition of the partition, then
// kept), and whether it has one.
func (s *Store[V]) Get(ctx context.Context, key string) (V, bool, error) {
	var v V
	if err := s.check(key); err != nil {
		return v, false, err
	}
	if w, ok := s.feed.Staged(s.t.name, key); ok {
		if w.Delete {
			return v, false, nil
		}
		return s.t.decode(key, w.Value)
	}
	data, ok, err := s.feed.ReadTable(ctx, s.t.name, key)
	if err != nil || !ok {
		return v, false, err
	}
	return s.t.decode(key, data)
}

// Set stages v as key's value. A value the codec cannot encode is refused
// here (ErrEncode) and nothing is staged.
func (s *Store[V]) Set(key string, v V) error {
	if err := s.check(key); err != nil {
		return err
	}
	data, err := s.t.codec.Marshal(v)
	if err != nil {
		return fmt.Errorf("%w: table %q: key %q: %w", ErrEncode, s.t.name, key, err)
	}
	s.feed.Stage(core.TableWrite{Table: s.t.name, Key: key, Value: data})
	return nil
}

// Delete stages the removal of key.
func (s *Store[V]) Delete(key string) error {
	if err := s.check(key); err != nil {
		return err
	}
	s.feed.Stage(core.TableWrite{Table: s.t.name, Key: key, Delete: true})
	return nil
}

// Scan calls fn with every key of the table and its value as last applied,
// partition by partition (HSCAN, a few hundred keys per round trip; a key
// written meanwhile may be seen with either value, or twice if it moves,
// as HSCAN guarantees no more), and stops at fn's first error, which it
// returns. Its cost grows with the table: for exports and tools, not for
// the path of every request.
func (t *Table[V]) Scan(ctx context.Context, fn func(key string, v V) error) error {
	cat := t.stream.Catalog()
	for p := range t.stream.Partitions() {
		hash := cat.Keys().Table(t.stream.Name(), t.processor, t.name, p)
		var cursor uint64
		for {
			kv, next, err := rdb.TableScan(ctx, cat.Client(), hash, cursor, 500)
			if err != nil {
				return fmt.Errorf("table %q: %w", t.name, err)
			}
			for i := 0; i+1 < len(kv); i += 2 {
				v, _, err := t.decode(kv[i], []byte(kv[i+1]))
				if err != nil {
					return err
				}
				if err := fn(kv[i], v); err != nil {
					return err
				}
			}
			if cursor = next; cursor == 0 {
				break
			}
		}
	}
	return nil
}
