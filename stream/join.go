package stream

import (
	"context"
	"errors"
	"fmt"

	"github.com/leatdev/leat/internal/core"
	"github.com/leatdev/leat/internal/rdb"
)

// ErrNotCoPartitioned is returned by Join for a stream and a table whose
// keys are not routed alike: a key's events and its value would live in
// partitions of different numbers.
var ErrNotCoPartitioned = errors.New("stream: streams not co-partitioned")

// JoinedTable is a table joined to a stream (Join): a processor of the
// stream reads, for each event, the value the table's processor committed
// for the event's key, from the partition of the same number.
//
// The join reads the table's committed values at the time the event is
// processed: there is no alignment in time between the two streams (like
// goka's Lookup, unlike a windowed join). An event sent after its key's
// value was changed may be processed before the table's processor applied
// the change, when that processor lags: it then sees the value before the
// change, or none (ok false) for a key the table does not hold yet. See
// docs/joins.md for what to do about it.
type JoinedTable[T, V any] struct {
	stream *core.Core
	table  *Table[V]
}

// Join joins table t to stream s, for s's processors to read, for each
// event's key, its value in t (JoinedTable.Get). The two must be
// co-partitioned: t's stream has as many partitions as s, and keys of the
// same kind (strings, integers or booleans), so that a key's events and its
// value are in partitions of the same number; otherwise Join fails with
// ErrNotCoPartitioned and says why. It does no I/O.
func Join[T, V any](s *Stream[T], t *Table[V]) (*JoinedTable[T, V], error) {
	if s == nil || t == nil {
		return nil, errors.New("join: stream or table is nil")
	}
	if err := coPartitioned(s.t.Core, t.stream, t.name); err != nil {
		return nil, err
	}
	return &JoinedTable[T, V]{stream: s.t.Core, table: t}, nil
}

func coPartitioned(s, u *core.Core, table string) error {
	ps, pu := s.Partitions(), u.Partitions()
	if ps != pu {
		return fmt.Errorf("%w: join of table %q to stream %q: %s has %d partitions, %s %d: a key's %s event and its %s value would live in different partitions",
			ErrNotCoPartitioned, table, s.Name(), s.Name(), ps, u.Name(), pu, s.Name(), u.Name())
	}
	ks, ku := s.KeyKind(), u.KeyKind()
	if ks != "" && ku != "" && ks != ku {
		return fmt.Errorf("%w: join of table %q to stream %q: %s is keyed by %s values, %s by %s values: a key would be routed by different bytes (declare both keys with the same type)",
			ErrNotCoPartitioned, table, s.Name(), s.Name(), ks, u.Name(), ku)
	}
	return nil
}

// Table returns the joined table.
func (j *JoinedTable[T, V]) Table() *Table[V] { return j.table }

// Get returns the value the table holds, as last committed, for e's key,
// and whether it holds one: one HGET on the table's partition of e's
// partition number. In a loop over batches, GetBatch reads a whole batch's
// in one round trip.
func (j *JoinedTable[T, V]) Get(ctx context.Context, e *Event[T]) (V, bool, error) {
	if err := j.check(e); err != nil {
		var zero V
		return zero, false, err
	}
	return j.table.Get(ctx, string(e.Key))
}

// GetBatch returns, for each event of batch, the table's value for its key
// as last committed and whether it holds one: one HMGET of the batch's keys
// (a batch holds the events of one partition), in one round trip.
func (j *JoinedTable[T, V]) GetBatch(ctx context.Context, batch []*Event[T]) ([]V, []bool, error) {
	values, found := make([]V, len(batch)), make([]bool, len(batch))
	if len(batch) == 0 {
		return values, found, nil
	}
	cat := j.table.stream.Catalog()
	byPart := map[int]int{} // partition -> group
	var hashes []string
	var keys [][]string
	var where [][]int // group -> indexes in batch
	for i, e := range batch {
		if err := j.check(e); err != nil {
			return nil, nil, err
		}
		g, ok := byPart[e.Partition]
		if !ok {
			g = len(hashes)
			byPart[e.Partition] = g
			hashes = append(hashes, cat.Keys().Table(j.table.stream.Name(), j.table.processor, j.table.name, e.Partition))
			keys, where = append(keys, nil), append(where, nil)
		}
		keys[g] = append(keys[g], string(e.Key))
		where[g] = append(where[g], i)
	}
	data, ok, err := rdb.TableMGet(ctx, cat.Client(), hashes, keys)
	if err != nil {
		return nil, nil, fmt.Errorf("table %q: %w", j.table.name, err)
	}
	for g := range hashes {
		for n, i := range where[g] {
			if !ok[g][n] {
				continue
			}
			v, _, err := j.table.decode(keys[g][n], data[g][n])
			if err != nil {
				return nil, nil, err
			}
			values[i], found[i] = v, true
		}
	}
	return values, found, nil
}

// check refuses an event of another stream's partition (a key routed
// elsewhere: an event built by hand, not handed out).
func (j *JoinedTable[T, V]) check(e *Event[T]) error {
	if e == nil {
		return errors.New("join: nil event")
	}
	if p := j.table.stream.PartitionOf(e.Key); p != e.Partition {
		return fmt.Errorf("%w: table %q: key %q is in partition %d, the event in %d", ErrOtherPartition, j.table.name, e.Key, p, e.Partition)
	}
	return nil
}

// In returns the join as the processor call of events sees it: reads by key,
// of the keys of events' partition (those whose values live in the table's
// partition of the same number). Use it from the call's goroutine, like
// events.
func (j *JoinedTable[T, V]) In(events Partition) *JoinReader[V] {
	feed, s := events.partitionFeed()
	r := &JoinReader[V]{table: j.table, partition: feed.Partition()}
	if s != j.stream {
		r.err = fmt.Errorf("%w: join of table %q to stream %q, opened on the events of stream %q",
			ErrTableElsewhere, j.table.name, j.stream.Name(), s.Name())
	}
	return r
}

// JoinReader reads a joined table by key in a processor call (JoinedTable.In).
type JoinReader[V any] struct {
	table     *Table[V]
	partition int
	err       error
}

// Get returns key's value as last committed and whether the table holds
// one (one HGET). A key of another partition than the call's fails with
// ErrOtherPartition.
func (r *JoinReader[V]) Get(ctx context.Context, key string) (V, bool, error) {
	values, ok, err := r.GetMany(ctx, []string{key})
	if err != nil {
		var zero V
		return zero, false, err
	}
	return values[0], ok[0], nil
}

// GetMany returns the values of keys as last committed, and whether the
// table holds each, in one HMGET.
func (r *JoinReader[V]) GetMany(ctx context.Context, keys []string) ([]V, []bool, error) {
	if r.err != nil {
		return nil, nil, r.err
	}
	values, found := make([]V, len(keys)), make([]bool, len(keys))
	if len(keys) == 0 {
		return values, found, nil
	}
	for _, k := range keys {
		if p := r.table.stream.PartitionOf([]byte(k)); p != r.partition {
			return nil, nil, fmt.Errorf("%w: table %q: key %q is in partition %d, not %d", ErrOtherPartition, r.table.name, k, p, r.partition)
		}
	}
	cat := r.table.stream.Catalog()
	hash := cat.Keys().Table(r.table.stream.Name(), r.table.processor, r.table.name, r.partition)
	data, ok, err := rdb.TableMGet(ctx, cat.Client(), []string{hash}, [][]string{keys})
	if err != nil {
		return nil, nil, fmt.Errorf("table %q: %w", r.table.name, err)
	}
	for i, k := range keys {
		if !ok[0][i] {
			continue
		}
		v, _, err := r.table.decode(k, data[0][i])
		if err != nil {
			return nil, nil, err
		}
		values[i], found[i] = v, true
	}
	return values, found, nil
}
