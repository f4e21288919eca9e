package stream

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/leatdev/leat/internal/core"
)

// In returns the windowed table as the processor call of events sees it.
// Use it from the call's goroutine, like events.
func (w *Windowed[V, T]) In(events *Events[T]) *WindowStore[V, T] {
	feed, src := events.partitionFeed()
	s := &WindowStore[V, T]{w: w, feed: feed}
	switch {
	case src != w.stream.t.Core && src.Name() == w.stream.Name():
		s.err = fmt.Errorf("%w: windowed table %q was declared on stream %q of another app: declare it on this app's stream",
			ErrTableElsewhere, w.name, src.Name())
	case src != w.stream.t.Core || feed.Processor() != w.processor:
		s.err = fmt.Errorf("%w: windowed table %q of processor %q on stream %q, opened in processor %q on stream %q",
			ErrTableElsewhere, w.name, w.processor, w.stream.Name(), feed.Processor(), src.Name())
	}
	if s.err == nil && w.emit != nil {
		s.emit = w.emit.In(events)
	}
	if s.err == nil && w.late != nil {
		s.late = w.late.In(events)
	}
	w.mu.Lock()
	if w.parts == nil {
		w.parts = map[int]*windowPart{}
	}
	w.mu.Unlock()
	return s
}

// WindowStore is a windowed table opened in a processor call
// ([Windowed.In]). Its writes, and the records it emits, are staged like
// a [Store]'s and an [Output]'s: applied with the acknowledgement of the
// event or batch the loop body was handed, in the same step, or not at
// all.
type WindowStore[V, T any] struct {
	w    *Windowed[V, T]
	feed core.Feed
	p    *windowPart
	emit *Output[WindowRecord[V]]
	late *Output[T]
	err  error
}

// Update applies fn to the value of every window of the event's key that
// the event falls in, and is not closed: fn gets the window's value and
// whether it has one (false for a window the event opens) and returns the
// new value. With session windows, the sessions the event bridges are
// merged first (MergeWith), and fn gets the merged value.
//
// It then moves the partition's event time to the event's time, if later,
// and closes the windows whose end plus grace it reached: each one's value
// is emitted (EmitTo), once, in the step that acknowledges this event.
// An event whose every window closed is late: fn is not called; it is
// counted and, with LateTo, sent to the side stream. Update reports
// whether the event was late.
func (s *WindowStore[V, T]) Update(ev *Event[T], fn func(old V, ok bool) V) (late bool, err error) {
	if s.err != nil {
		return false, s.err
	}
	ctx := ev.Context()
	p, err := s.part(ctx)
	if err != nil {
		return false, err
	}
	now, err := s.clock(ctx)
	if err != nil {
		return false, err
	}
	t := s.w.timeOf(ev)
	key := string(ev.Key)
	var applied bool
	if s.w.kind.kind == kindSession {
		applied, err = s.updateSession(ctx, p, key, t, now, fn)
	} else {
		applied, err = s.updateFixed(ctx, p, key, t, now, fn)
	}
	if err != nil {
		return false, err
	}
	if !applied {
		if err := s.countLate(ctx, ev); err != nil {
			return false, err
		}
	}
	if t > now {
		now = t
		s.feed.Stage(core.TableWrite{Table: s.w.name, Key: fieldClock, Value: strconv.AppendInt(nil, t, 10)})
	}
	return !applied, s.closeDue(ctx, p, now)
}

// timeOf is the event's time in Unix ms: EventTime's, else its entry's.
func (w *Windowed[V, T]) timeOf(ev *Event[T]) int64 {
	if w.eventTime != nil {
		return w.eventTime(ev.Record).UnixMilli()
	}
	ms, _, _ := strings.Cut(ev.ID, "-")
	n, _ := strconv.ParseInt(ms, 10, 64)
	return n
}

// updateFixed updates the tumbling or hopping windows t falls in.
func (s *WindowStore[V, T]) updateFixed(ctx context.Context, p *windowPart, key string, t, now int64, fn func(V, bool) V) (bool, error) {
	w := s.w
	size, adv := w.kind.size.Milliseconds(), w.kind.advance.Milliseconds()
	applied := false
	// the windows [start, start+size) holding t: start = k*adv, k from
	// floor((t-size)/adv)+1 to floor(t/adv)
	for k := floorDiv(t-size, adv) + 1; k <= floorDiv(t, adv); k++ {
		start := k * adv
		end := start + size
		if satAdd(end, w.grace) <= now {
			continue
		}
		field := windowField(start, key)
		rec, ok, err := s.get(ctx, field)
		if err != nil {
			return false, err
		}
		if ok && rec.Closed {
			continue
		}
		var old V
		if ok {
			if err := w.codec.Unmarshal(rec.Data, &old); err != nil {
				return false, w.errorf(fmt.Errorf("key %q: %w", key, err))
			}
		}
		if err := s.put(field, end, fn(old, ok)); err != nil {
			return false, err
		}
		if !ok {
			p.schedule(winID{key, start}, satAdd(end, w.grace))
		}
		applied = true
	}
	return applied, nil
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}

type session struct {
	start int64
	rec   windowRec
}

// updateSession adds t to the key's session it falls in, merging the
// sessions it bridges, or opens one.
func (s *WindowStore[V, T]) updateSession(ctx context.Context, p *windowPart, key string, t, now int64, fn func(V, bool) V) (bool, error) {
	w := s.w
	gap := w.kind.size.Milliseconds()
	var hits []session
	for start := range p.sessions[key] {
		field := windowField(start, key)
		rec, ok, err := s.get(ctx, field)
		if err != nil {
			return false, err
		}
		if !ok {
			if _, staged := s.feed.Staged(w.name, field); !staged {
				p.dropSession(winID{key, start})
			}
			continue
		}
		if rec.Closed || satAdd(rec.End, w.grace) <= now {
			continue // closed, or closing at the end of this Update
		}
		if t > start-gap && t < rec.End {
			hits = append(hits, session{start, rec})
		}
	}
	if len(hits) == 0 {
		if satAdd(t+gap, w.grace) <= now {
			return false, nil
		}
		var zero V
		if err := s.put(windowField(t, key), t+gap, fn(zero, false)); err != nil {
			return false, err
		}
		id := winID{key, t}
		p.addSession(id)
		p.schedule(id, satAdd(t+gap, w.grace))
		return true, nil
	}
	slices.SortFunc(hits, func(a, b session) int { return compareInt(a.start, b.start) })
	start, end := min(t, hits[0].start), t+gap
	var acc V
	for i, h := range hits {
		var v V
		if err := w.codec.Unmarshal(h.rec.Data, &v); err != nil {
			return false, w.errorf(fmt.Errorf("key %q: %w", key, err))
		}
		if i == 0 {
			acc = v
		} else {
			acc = w.merge(acc, v)
		}
		end = max(end, h.rec.End)
	}
	for _, h := range hits {
		if h.start != start {
			s.feed.Stage(core.TableWrite{Table: w.name, Key: windowField(h.start, key), Delete: true})
			p.dropSession(winID{key, h.start})
		}
	}
	if err := s.put(windowField(start, key), end, fn(acc, true)); err != nil {
		return false, err
	}
	id := winID{key, start}
	p.addSession(id)
	p.schedule(id, satAdd(end, w.grace))
	return true, nil
}

func compareInt(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// put stages v as the value of the open window at field, ending at end.
func (s *WindowStore[V, T]) put(field string, end int64, v V) error {
	data, err := s.w.codec.Marshal(v)
	if err != nil {
		return fmt.Errorf("%w: windowed table %q: %w", ErrEncode, s.w.name, err)
	}
	s.feed.Stage(core.TableWrite{Table: s.w.name, Key: field, Value: encodeWindow(windowRec{End: end, Data: data})})
	return nil
}

// get returns the window record at field: staged, else committed.
func (s *WindowStore[V, T]) get(ctx context.Context, field string) (windowRec, bool, error) {
	data, ok, err := s.read(ctx, field)
	if err != nil || !ok {
		return windowRec{}, false, err
	}
	rec, err := decodeWindow(data)
	if err != nil {
		return windowRec{}, false, s.w.errorf(fmt.Errorf("field %q: %w", field, err))
	}
	return rec, true, nil
}

func (s *WindowStore[V, T]) read(ctx context.Context, field string) ([]byte, bool, error) {
	if tw, ok := s.feed.Staged(s.w.name, field); ok {
		return tw.Value, !tw.Delete, nil
	}
	data, ok, err := s.feed.ReadTable(ctx, s.w.name, field)
	if err != nil {
		return nil, false, s.w.errorf(err)
	}
	return data, ok, nil
}

// readInt reads a counter field (0, or def, when absent).
func (s *WindowStore[V, T]) readInt(ctx context.Context, field string, def int64) (int64, error) {
	data, ok, err := s.read(ctx, field)
	if err != nil || !ok {
		return def, err
	}
	n, err := strconv.ParseInt(string(data), 10, 64)
	if err != nil {
		return 0, s.w.errorf(fmt.Errorf("field %q: %w", field, err))
	}
	return n, nil
}

// clock returns the partition's event time (math.MinInt64 before any).
func (s *WindowStore[V, T]) clock(ctx context.Context) (int64, error) {
	return s.readInt(ctx, fieldClock, math.MinInt64)
}

// EventTime returns the partition's event time as this call sees it
// (staged updates included), in Unix ms, and false before any event.
func (s *WindowStore[V, T]) EventTime(ctx context.Context) (int64, bool, error) {
	if s.err != nil {
		return 0, false, s.err
	}
	t, err := s.clock(ctx)
	return t, t != math.MinInt64 && err == nil, err
}

func (s *WindowStore[V, T]) countLate(ctx context.Context, ev *Event[T]) error {
	n, err := s.readInt(ctx, fieldLate, 0)
	if err != nil {
		return err
	}
	s.feed.Stage(core.TableWrite{Table: s.w.name, Key: fieldLate, Value: strconv.AppendInt(nil, n+1, 10)})
	if s.late != nil {
		return s.late.Send(ev.Record)
	}
	return nil
}

// emitClosed stages the final value of window id for the EmitTo stream.
func (s *WindowStore[V, T]) emitClosed(id winID, rec windowRec) error {
	if s.emit == nil {
		return nil
	}
	var v V
	if err := s.w.codec.Unmarshal(rec.Data, &v); err != nil {
		return s.w.errorf(fmt.Errorf("key %q: %w", id.key, err))
	}
	return s.emit.Send(WindowRecord[V]{Key: id.key, Start: id.start, End: rec.End, Value: v})
}
