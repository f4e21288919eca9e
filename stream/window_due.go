package stream

import (
	"container/heap"
	"context"
	"math"

	"github.com/leatdev/leat/internal/core"
	"github.com/leatdev/leat/internal/rdb"
)

// A worker's knowledge of one partition's windows, for one hold of the
// partition (one fencing token): every window it may hold, each with the
// event time at which to look at it next (its end plus the grace to close
// it, its end plus the retention to delete it), in a heap by that time.
// It is loaded from the partition's hash (HSCAN, once per hold) and
// completed by the windows the loop bodies create. It may name windows
// that are gone (a loop body that created one failed): each is looked up
// (staged write, else the committed value, which the runtime caches)
// before anything is done to it, and what is done is staged like any
// write, so the hash alone is the truth and this is only an index.

// winID names a window of a partition: its key and start (Unix ms).
type winID struct {
	key   string
	start int64
}

type dueItem struct {
	id  winID
	at  int64
	idx int
}

// dueHeap is a min-heap of windows by at.
type dueHeap []*dueItem

func (h dueHeap) Len() int           { return len(h) }
func (h dueHeap) Less(i, j int) bool { return h[i].at < h[j].at }
func (h dueHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i]; h[i].idx = i; h[j].idx = j }
func (h *dueHeap) Push(x any)        { it := x.(*dueItem); it.idx = len(*h); *h = append(*h, it) }
func (h *dueHeap) Pop() any {
	old := *h
	it := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	it.idx = -1
	return it
}

type windowPart struct {
	token int64
	due   dueHeap
	items map[winID]*dueItem
	// recheck are windows whose close or deletion is staged and not yet
	// known to be committed: looked at again by the next Update, so that a
	// loop body that failed (its writes dropped) has them done again.
	recheck []winID
	// sessions are the start times of each key's sessions (session
	// windows only).
	sessions map[string]map[int64]struct{}
}

func newWindowPart(token int64) *windowPart {
	return &windowPart{token: token, items: map[winID]*dueItem{}, sessions: map[string]map[int64]struct{}{}}
}

// schedule sets the time to look at id next (one entry per window: the
// last time set).
func (p *windowPart) schedule(id winID, at int64) {
	if it, ok := p.items[id]; ok {
		it.at = at
		heap.Fix(&p.due, it.idx)
		return
	}
	it := &dueItem{id: id, at: at}
	p.items[id] = it
	heap.Push(&p.due, it)
}

// popDue removes and returns the windows due at or before now.
func (p *windowPart) popDue(now int64, into []winID) []winID {
	for len(p.due) > 0 && p.due[0].at <= now {
		it := heap.Pop(&p.due).(*dueItem)
		delete(p.items, it.id)
		into = append(into, it.id)
	}
	return into
}

func (p *windowPart) addSession(id winID) {
	set := p.sessions[id.key]
	if set == nil {
		set = map[int64]struct{}{}
		p.sessions[id.key] = set
	}
	set[id.start] = struct{}{}
}

func (p *windowPart) dropSession(id winID) {
	if set := p.sessions[id.key]; set != nil {
		delete(set, id.start)
		if len(set) == 0 {
			delete(p.sessions, id.key)
		}
	}
}

// part returns the index of the call's partition for its hold, loading it
// at the first use of a hold.
func (s *WindowStore[V, T]) part(ctx context.Context) (*windowPart, error) {
	if s.p != nil {
		return s.p, nil
	}
	w, token, n := s.w, s.feed.Token(), s.feed.Partition()
	w.mu.Lock()
	p := w.parts[n]
	w.mu.Unlock()
	if p != nil && p.token == token {
		s.p = p
		return p, nil
	}
	p = newWindowPart(token)
	if err := s.load(ctx, p); err != nil {
		return nil, err
	}
	w.mu.Lock()
	if old := w.parts[n]; old == nil || old.token <= token {
		w.parts[n] = p // an older hold (a stalled worker of this process) keeps its own
	}
	w.mu.Unlock()
	s.p = p
	return p, nil
}

// load indexes the windows of the partition's hash as committed.
func (s *WindowStore[V, T]) load(ctx context.Context, p *windowPart) error {
	w := s.w
	hash := w.hash(s.feed.Partition())
	client := w.stream.t.Core.Catalog().Client()
	var cursor uint64
	for {
		kv, next, err := rdb.TableScan(ctx, client, hash, cursor, 500)
		if err != nil {
			return w.errorf(err)
		}
		for i := 0; i+1 < len(kv); i += 2 {
			start, key, ok := parseWindowField(kv[i])
			if !ok {
				continue
			}
			rec, err := decodeWindow([]byte(kv[i+1]))
			if err != nil {
				return w.errorf(err)
			}
			id := winID{key, start}
			if rec.Closed {
				p.schedule(id, satAdd(rec.End, w.retention))
			} else {
				p.schedule(id, satAdd(rec.End, w.grace))
			}
			if w.kind.kind == kindSession && !rec.Closed {
				p.addSession(id)
			}
		}
		if cursor = next; cursor == 0 {
			return nil
		}
	}
}

// satAdd is a+b, saturated at the int64 bounds.
func satAdd(a, b int64) int64 {
	switch {
	case b > 0 && a > math.MaxInt64-b:
		return math.MaxInt64
	case b < 0 && a < math.MinInt64-b:
		return math.MinInt64
	}
	return a + b
}

// closeDue closes and deletes the windows due at event time now (and
// looks again at those whose change is not committed yet).
func (s *WindowStore[V, T]) closeDue(ctx context.Context, p *windowPart, now int64) error {
	ids := p.recheck
	p.recheck = nil
	ids = p.popDue(now, ids)
	if len(ids) == 0 {
		return nil
	}
	var seen map[winID]struct{}
	if len(ids) > 1 {
		seen = make(map[winID]struct{}, len(ids))
	}
	for _, id := range ids {
		if seen != nil {
			if _, dup := seen[id]; dup {
				continue
			}
			seen[id] = struct{}{}
		}
		if err := s.settle(ctx, p, id, now); err != nil {
			return err
		}
	}
	return nil
}

// settle does what is due to window id at event time now: emit and close
// it, delete it, or schedule it again.
func (s *WindowStore[V, T]) settle(ctx context.Context, p *windowPart, id winID, now int64) error {
	w := s.w
	field := windowField(id.start, id.key)
	rec, ok, err := s.get(ctx, field)
	if err != nil {
		return err
	}
	if !ok {
		if _, staged := s.feed.Staged(w.name, field); staged {
			p.recheck = append(p.recheck, id) // a deletion not committed yet
		} else {
			p.dropSession(id)
		}
		return nil
	}
	if !rec.Closed {
		if satAdd(rec.End, w.grace) > now {
			p.schedule(id, satAdd(rec.End, w.grace)) // a session that grew
			return nil
		}
		if err := s.emitClosed(id, rec); err != nil {
			return err
		}
		rec.Closed = true
		p.dropSession(id)
		if satAdd(rec.End, w.retention) <= now {
			s.feed.Stage(core.TableWrite{Table: w.name, Key: field, Delete: true})
		} else {
			s.feed.Stage(core.TableWrite{Table: w.name, Key: field, Value: encodeWindow(rec)})
			p.schedule(id, satAdd(rec.End, w.retention))
		}
		p.recheck = append(p.recheck, id)
		return nil
	}
	if satAdd(rec.End, w.retention) <= now {
		s.feed.Stage(core.TableWrite{Table: w.name, Key: field, Delete: true})
		p.recheck = append(p.recheck, id)
		return nil
	}
	if _, staged := s.feed.Staged(w.name, field); staged {
		p.recheck = append(p.recheck, id)
		return nil
	}
	p.schedule(id, satAdd(rec.End, w.retention))
	return nil
}
