package stream

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/leatdev/leat/internal/core"
	"github.com/leatdev/leat/internal/rdb"
)

// WindowKind is how a windowed table cuts event time into windows:
// [Tumbling], [Hopping] or [Session].
type WindowKind struct {
	kind    windowKind
	size    time.Duration
	advance time.Duration
}

type windowKind int

const (
	kindTumbling windowKind = iota + 1
	kindHopping
	kindSession
)

// Tumbling cuts event time into windows of size, back to back: [0, size),
// [size, 2*size), ... (from the Unix epoch). An event falls in one window.
func Tumbling(size time.Duration) WindowKind {
	return WindowKind{kind: kindTumbling, size: size, advance: size}
}

// Hopping cuts event time into windows of size starting every advance
// (advance <= size): an event falls in size/advance windows (rounded up).
func Hopping(size, advance time.Duration) WindowKind {
	return WindowKind{kind: kindHopping, size: size, advance: advance}
}

// Session groups a key's events into sessions: an event less than gap
// after the key's last one (or less than gap before its first) joins that
// session; an event that bridges two sessions merges them (with the
// [MergeWith] function, required for sessions). A session starts at its
// first event and ends at its last event plus gap.
func Session(gap time.Duration) WindowKind {
	return WindowKind{kind: kindSession, size: gap}
}

func (k WindowKind) String() string {
	switch k.kind {
	case kindTumbling:
		return "tumbling(" + k.size.String() + ")"
	case kindHopping:
		return "hopping(" + k.size.String() + "," + k.advance.String() + ")"
	case kindSession:
		return "session(" + k.size.String() + ")"
	}
	return "none"
}

func (k WindowKind) check() error {
	switch {
	case k.kind == 0:
		return errors.New("no window kind: use Tumbling, Hopping or Session")
	case k.size < time.Millisecond:
		return fmt.Errorf("window %s: size must be at least 1ms", k)
	case k.kind != kindSession && k.advance < time.Millisecond:
		return fmt.Errorf("window %s: advance must be at least 1ms", k)
	case k.advance > k.size:
		return fmt.Errorf("window %s: advance must not exceed the size", k)
	case k.size%time.Millisecond != 0 || k.advance%time.Millisecond != 0:
		return fmt.Errorf("window %s: sizes are whole milliseconds", k)
	}
	return nil
}

// WindowRecord is what a windowed table emits when a window closes
// ([EmitTo]): the key, the window's bounds [Start, End) and its final
// value. Declare the output stream with stream.KeyField("key") to keep a
// key's windows in one partition, in order.
type WindowRecord[V any] struct {
	Key   string `msgpack:"key" json:"key"`
	Start int64  `msgpack:"start" json:"start"` // Unix milliseconds
	End   int64  `msgpack:"end" json:"end"`     // Unix milliseconds, exclusive
	Value V      `msgpack:"value" json:"value"`
}

// StartTime returns Start as a time.
func (r WindowRecord[V]) StartTime() time.Time { return time.UnixMilli(r.Start) }

// EndTime returns End as a time.
func (r WindowRecord[V]) EndTime() time.Time { return time.UnixMilli(r.End) }

// Window is one window of a key as [Windowed.Windows] reads it.
type Window[V any] struct {
	Start, End time.Time
	Value      V
	// Closed reports whether the window closed (its value was emitted, no
	// later event changes it); a closed window is kept until its
	// retention ends.
	Closed bool
}

// A WindowOption tweaks one windowed table declaration.
type WindowOption func(*windowSpec)

type windowSpec struct {
	codec     Codec
	grace     time.Duration
	retention time.Duration
	eventTime any // func(T) time.Time
	emit      any // *Stream[WindowRecord[V]]
	late      any // *Stream[T]
	merge     any // func(V, V) V
}

// Grace is how long after its end a window still takes events (default
// 0): a window closes when its end plus grace is at or before the
// partition's event time.
func Grace(d time.Duration) WindowOption { return func(s *windowSpec) { s.grace = d } }

// WindowRetention is how long after its end a window is kept (default:
// the grace, so a window is deleted as it closes). It is deleted, by the
// processor's own commits, once its end plus retention is at or before
// the partition's event time; until then Get and Windows read it.
func WindowRetention(d time.Duration) WindowOption { return func(s *windowSpec) { s.retention = d } }

// WindowCodec sets the codec window values are stored with (default:
// MsgPack).
func WindowCodec(c Codec) WindowOption { return func(s *windowSpec) { s.codec = c } }

// EventTime sets the time of an event (default: its entry's time, the
// milliseconds of its ID). T is the stream's record type.
func EventTime[T any](fn func(T) time.Time) WindowOption {
	return func(s *windowSpec) { s.eventTime = fn }
}

// EmitTo sends each window's final value to out when the window closes,
// once, as an exactly-once output (see [Output]): staged with the
// acknowledgement of the event that moved event time past it.
func EmitTo[V any](out *Stream[WindowRecord[V]]) WindowOption {
	return func(s *windowSpec) { s.emit = out }
}

// LateTo sends events that came too late for every window they fall in
// to side, as an exactly-once output, besides counting them ([Windowed.Late]).
// T is the stream's record type.
func LateTo[T any](side *Stream[T]) WindowOption {
	return func(s *windowSpec) { s.late = side }
}

// MergeWith sets how the values of two sessions are combined when an
// event bridges them: required for [Session] windows, ignored by the
// others.
func MergeWith[V any](fn func(a, b V) V) WindowOption {
	return func(s *windowSpec) { s.merge = fn }
}

// Windowed is a windowed table: a value of type V per key and window of
// the events of a processor, kept in Redis beside the partitions like a
// [Table], and written the same way: staged by a loop body
// ([Windowed.In], [WindowStore.Update]), applied with the
// acknowledgement. See docs/windows.md.
//
// Each partition has an event time: the latest event time its
// acknowledged events carried, committed with them. A window closes when
// its end plus the grace is at or before it: its value is emitted
// ([EmitTo]) in the step that acknowledges the event that moved event time
// there, and the window takes no more events. An event whose every window
// has closed is late: dropped and counted ([Windowed.Late]), or sent to a
// side stream ([LateTo]).
type Windowed[V, T any] struct {
	stream    *Stream[T]
	processor string
	name      string
	kind      WindowKind
	codec     Codec
	grace     int64 // ms
	retention int64 // ms
	eventTime func(T) time.Time
	emit      *Stream[WindowRecord[V]]
	late      *Stream[T]
	merge     func(V, V) V

	mu    sync.Mutex
	parts map[int]*windowPart
}

// DeclareWindowed declares the windowed table called name of the processor
// called processor on stream s, holding values of type V (the type
// argument to give: DeclareWindowed[int64](views, "counter", "per-minute",
// stream.Tumbling(time.Minute))). Names are those of tables, and share
// their namespace: a table and a windowed table of one processor cannot
// have the same name. It does no I/O.
func DeclareWindowed[V, T any](s *Stream[T], processor, name string, kind WindowKind, opts ...WindowOption) (*Windowed[V, T], error) {
	if err := rdb.CheckName("processor", processor); err != nil {
		return nil, err
	}
	if err := rdb.CheckName("windowed table", name); err != nil {
		return nil, err
	}
	if err := kind.check(); err != nil {
		return nil, fmt.Errorf("windowed table %q: %w", name, err)
	}
	spec := windowSpec{codec: MsgPack, retention: -1}
	for _, o := range opts {
		o(&spec)
	}
	w := &Windowed[V, T]{stream: s, processor: processor, name: name, kind: kind, codec: spec.codec}
	fail := func(format string, a ...any) (*Windowed[V, T], error) {
		return nil, fmt.Errorf("windowed table %q: "+format, append([]any{name}, a...)...)
	}
	switch {
	case spec.codec == nil:
		return fail("codec is nil")
	case spec.grace < 0:
		return fail("grace %s is negative", spec.grace)
	case spec.retention >= 0 && spec.retention < spec.grace:
		return fail("retention %s is shorter than the grace %s", spec.retention, spec.grace)
	}
	w.grace = spec.grace.Milliseconds()
	w.retention = w.grace
	if spec.retention >= 0 {
		w.retention = spec.retention.Milliseconds()
	}
	if spec.eventTime != nil {
		fn, ok := spec.eventTime.(func(T) time.Time)
		if !ok || fn == nil {
			return fail("EventTime takes a func(%T) time.Time, not %T", *new(T), spec.eventTime)
		}
		w.eventTime = fn
	}
	if spec.emit != nil {
		out, ok := spec.emit.(*Stream[WindowRecord[V]])
		if !ok || out == nil {
			return fail("EmitTo takes a *Stream[WindowRecord[%T]], not %T", *new(V), spec.emit)
		}
		w.emit = out
	}
	if spec.late != nil {
		side, ok := spec.late.(*Stream[T])
		if !ok || side == nil {
			return fail("LateTo takes a *Stream[%T], not %T", *new(T), spec.late)
		}
		w.late = side
	}
	if spec.merge != nil {
		fn, ok := spec.merge.(func(V, V) V)
		if !ok || fn == nil {
			return fail("MergeWith takes a func(a, b %T) %T, not %T", *new(V), *new(V), spec.merge)
		}
		w.merge = fn
	}
	if kind.kind == kindSession && w.merge == nil {
		return fail("session windows need MergeWith")
	}
	if err := s.t.Core.DeclareTable(processor, name, windowCodecPrefix+spec.codec.Name(), 0); err != nil {
		return nil, err
	}
	return w, nil
}

// windowCodecPrefix marks a windowed table in the processor registry: its
// hash holds window records, not bare values.
const windowCodecPrefix = core.WindowCodecPrefix

// Name returns the windowed table's name.
func (w *Windowed[V, T]) Name() string { return w.name }

// Kind returns how the table cuts event time into windows.
func (w *Windowed[V, T]) Kind() WindowKind { return w.kind }

func (w *Windowed[V, T]) hash(p int) string {
	c := w.stream.t.Core
	return c.Catalog().Keys().Table(c.Name(), w.processor, w.name, p)
}

// Get returns the value of key's window that starts at start, as last
// applied (one HGET on the key's partition), and whether there is one: a
// window open, or closed and within its retention.
func (w *Windowed[V, T]) Get(ctx context.Context, key string, start time.Time) (V, bool, error) {
	var v V
	c := w.stream.t.Core
	data, ok, err := rdb.TableGet(ctx, c.Catalog().Client(), w.hash(c.PartitionOf([]byte(key))), windowField(start.UnixMilli(), key))
	if err != nil || !ok {
		return v, false, w.errorf(err)
	}
	rec, err := decodeWindow(data)
	if err != nil {
		return v, false, w.errorf(err)
	}
	if err := w.codec.Unmarshal(rec.Data, &v); err != nil {
		return v, false, w.errorf(err)
	}
	return v, true, nil
}

// Windows returns key's windows as last applied, open and retained, by
// start: one HSCAN of the key's partition, whose cost grows with the
// partition's windows (for tools and tests rather than every request).
func (w *Windowed[V, T]) Windows(ctx context.Context, key string) ([]Window[V], error) {
	c := w.stream.t.Core
	fields, err := rdb.WindowScan(ctx, c.Catalog().Client(), w.hash(c.PartitionOf([]byte(key))), key)
	if err != nil {
		return nil, w.errorf(err)
	}
	var out []Window[V]
	for i := 0; i+1 < len(fields); i += 2 {
		start, k, ok := parseWindowField(fields[i])
		if !ok || k != key {
			continue
		}
		rec, err := decodeWindow([]byte(fields[i+1]))
		if err != nil {
			return nil, w.errorf(err)
		}
		var v V
		if err := w.codec.Unmarshal(rec.Data, &v); err != nil {
			return nil, w.errorf(err)
		}
		out = append(out, Window[V]{Start: time.UnixMilli(start), End: time.UnixMilli(rec.End), Value: v, Closed: rec.Closed})
	}
	sortWindows(out)
	return out, nil
}

// Late returns how many events came too late for every window they fall
// in (dropped, or sent to the LateTo stream), over all partitions, as
// committed with their acknowledgements: an event redelivered is counted
// once.
func (w *Windowed[V, T]) Late(ctx context.Context) (int64, error) {
	n := w.stream.t.Core.Partitions()
	hashes, fields := make([]string, n), make([]string, n)
	for p := range n {
		hashes[p], fields[p] = w.hash(p), fieldLate
	}
	values, ok, err := rdb.TableGets(ctx, w.stream.t.Core.Catalog().Client(), hashes, fields)
	if err != nil {
		return 0, w.errorf(err)
	}
	var total int64
	for p := range values {
		if ok[p] {
			v, err := strconv.ParseInt(string(values[p]), 10, 64)
			if err != nil {
				return 0, w.errorf(fmt.Errorf("late count of partition %d: %w", p, err))
			}
			total += v
		}
	}
	return total, nil
}

// EventTimeOf returns partition p's event time as committed (the zero
// time when no event was acknowledged yet).
func (w *Windowed[V, T]) EventTimeOf(ctx context.Context, p int) (time.Time, error) {
	if p < 0 || p >= w.stream.t.Core.Partitions() {
		return time.Time{}, fmt.Errorf("windowed table %q: no partition %d", w.name, p)
	}
	data, ok, err := rdb.TableGet(ctx, w.stream.t.Core.Catalog().Client(), w.hash(p), fieldClock)
	if err != nil || !ok {
		return time.Time{}, w.errorf(err)
	}
	ms, err := strconv.ParseInt(string(data), 10, 64)
	if err != nil {
		return time.Time{}, w.errorf(err)
	}
	return time.UnixMilli(ms), nil
}

func (w *Windowed[V, T]) errorf(err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("windowed table %q: %w", w.name, err)
}

// The fields of a windowed table's hash: see core.WindowField.
const (
	fieldClock = core.WindowFieldClock
	fieldLate  = core.WindowFieldLate
)

func windowField(start int64, key string) string { return core.WindowField(start, key) }

func parseWindowField(f string) (int64, string, bool) { return core.ParseWindowField(f) }

type windowRec = core.WindowRec

func encodeWindow(r windowRec) []byte { return core.EncodeWindow(r) }

func decodeWindow(b []byte) (windowRec, error) { return core.DecodeWindow(b) }

func sortWindows[V any](ws []Window[V]) {
	slices.SortFunc(ws, func(a, b Window[V]) int { return a.Start.Compare(b.Start) })
}
