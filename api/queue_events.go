package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/leatdev/leat/task"
)

// queueEventsPage is how many events a follower of a queue reads at once.
const queueEventsPage = 256

// queueEventsPing is how often a follower of a queue's events is sent a
// comment while no event comes, so that proxies keep the connection and a
// client that left is noticed.
const queueEventsPing = 15 * time.Second

// watchers are the readers of queues' events that wake the followers of
// GET /v1/queues/{queue}/events: one per followed queue, blocked on the
// queue's events stream (task.Queue.Events from "$"), however many follow
// it. Each follower reads the events itself, from its own position, in
// pages without blocking (task.Queue.EventsAfter), whenever its queue's
// reader saw new ones: a slow follower holds up nobody, and one that
// resumes from an event ID gets every event after it that the history
// still holds.
//
// The first follower of a queue starts its reader and waits until it has
// taken its position, so that every event after the follower's first read
// wakes it; the last to leave stops the reader and waits for it.
type watchers struct {
	mu     sync.Mutex
	queues map[string]*watch
}

// watch is the reader of one queue's events. Its fields past done are
// guarded by watchers.mu.
type watch struct {
	name    string
	cancel  context.CancelFunc
	started chan struct{} // closed when the reader took its position
	done    chan struct{} // closed when the reader returned

	subs   int
	failed bool          // reading failed: the followers end
	wake   chan struct{} // closed at each new batch of events, then replaced
}

func newWatchers() *watchers { return &watchers{queues: map[string]*watch{}} }

// join adds a follower to q's reader, starting it when it is the first,
// and returns once the reader took its position (or ctx ended).
func (ws *watchers) join(ctx context.Context, q *rawQueue, h *handler) (*watch, error) {
	ws.mu.Lock()
	wt := ws.queues[q.Name()]
	if wt == nil || wt.failed {
		rctx, cancel := context.WithCancel(context.Background())
		wt = &watch{name: q.Name(), cancel: cancel, started: make(chan struct{}), done: make(chan struct{}), wake: make(chan struct{})}
		ws.queues[q.Name()] = wt
		go ws.read(rctx, wt, q, h)
	}
	wt.subs++
	ws.mu.Unlock()
	select {
	case <-wt.started:
		return wt, nil
	case <-ctx.Done():
		ws.leave(wt)
		return nil, ctx.Err()
	}
}

// leave removes a follower; the last one stops the reader and waits for it.
func (ws *watchers) leave(wt *watch) {
	ws.mu.Lock()
	wt.subs--
	last := wt.subs == 0
	if last && ws.queues[wt.name] == wt {
		delete(ws.queues, wt.name)
	}
	ws.mu.Unlock()
	if last {
		wt.cancel()
		<-wt.done
	}
}

// read follows q's new events and wakes wt's followers after each batch,
// until reading fails or the last follower left.
func (ws *watchers) read(ctx context.Context, wt *watch, q *rawQueue, h *handler) {
	defer close(wt.done)
	last, err := q.LastEventID(ctx)
	close(wt.started)
	if err == nil {
		for ev, rerr := range q.Events(ctx, last) {
			if rerr != nil {
				err = rerr
				break
			}
			_ = ev
			ws.signal(wt, false)
		}
	}
	if ctx.Err() == nil && err != nil {
		h.log.Error("api: following queue events failed", "queue", q.Name(), "err", err)
	}
	ws.signal(wt, true)
}

// signal wakes wt's followers; failed marks its reading over.
func (ws *watchers) signal(wt *watch, failed bool) {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	if failed {
		wt.failed = true
	}
	close(wt.wake)
	wt.wake = make(chan struct{})
}

// state returns the channel closed at wt's next batch and whether its
// reading is over.
func (ws *watchers) state(wt *watch) (<-chan struct{}, bool) {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	return wt.wake, wt.failed
}

// queueEvents streams the state changes of a queue's tasks as server-sent
// events ("task" events whose data is a task.QueueEvent and whose id is its
// ID in the queue's events stream), from the position of the query's since
// ("$": new ones, the default; "0": the whole history kept; an event ID:
// the events after it) or of the Last-Event-ID header of a client that
// reconnects. Its followers count towards Options.MaxFollowers.
func (h *handler) queueEvents(w http.ResponseWriter, r *http.Request) {
	since := r.URL.Query().Get("since")
	if id := r.Header.Get("Last-Event-ID"); id != "" {
		since = id
	}
	if since == "" {
		since = "$"
	}
	if err := task.CheckEventPosition(since); err != nil {
		writeError(w, http.StatusBadRequest, "bad_position", err.Error())
		return
	}
	if !h.follows.reserve() {
		w.Header().Set("Retry-After", strconv.Itoa(int(followRetryAfter/time.Second)))
		writeError(w, http.StatusServiceUnavailable, "too_many_followers",
			fmt.Sprintf("%d clients follow events already, the most this server takes; try again later", h.follows.max))
		return
	}
	defer h.follows.release()
	q := h.lookupQueue(w, r)
	if q == nil {
		return
	}
	ctx := r.Context()
	wt, err := h.watches.join(ctx, q, h)
	if err != nil {
		return // the client left
	}
	defer h.watches.leave(wt)
	last := since
	if since == "$" {
		if last, err = q.LastEventID(ctx); err != nil {
			internalError(w, err)
			return
		}
	}
	rc := http.NewResponseController(w)
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.Header().Set("X-Accel-Buffering", "no")
	_ = rc.SetWriteDeadline(time.Now().Add(followWriteTimeout))
	w.WriteHeader(http.StatusOK)
	if err := rc.Flush(); err != nil {
		return
	}
	ping := time.NewTicker(queueEventsPing)
	defer ping.Stop()
	for {
		// The channel first, then the reads: a batch the reader sees
		// after the last read wakes this follower.
		wake, failed := h.watches.state(wt)
		for {
			evs, err := q.EventsAfter(ctx, last, queueEventsPage)
			if err != nil {
				if ctx.Err() == nil {
					h.log.Error("api: reading queue events failed", "queue", q.Name(), "err", err)
					writeEventError(w, rc, "reading the queue's events failed: the server logged the details")
				}
				return
			}
			for _, ev := range evs {
				b, _ := json.Marshal(ev)
				// A deadline per event: a follower that keeps reading,
				// however slowly, is never cut; one that accepts nothing
				// for followWriteTimeout is.
				_ = rc.SetWriteDeadline(time.Now().Add(followWriteTimeout))
				if _, err := fmt.Fprintf(w, "id: %s\nevent: task\ndata: %s\n\n", ev.ID, b); err != nil {
					return
				}
				last = ev.ID
			}
			if len(evs) > 0 {
				if err := rc.Flush(); err != nil {
					return
				}
			}
			if len(evs) < queueEventsPage {
				break
			}
		}
		if failed {
			writeEventError(w, rc, "reading the queue's events failed: the server logged the details")
			return
		}
		select {
		case <-wake:
		case <-ping.C:
			_ = rc.SetWriteDeadline(time.Now().Add(followWriteTimeout))
			if _, err := fmt.Fprint(w, ": ping\n\n"); err != nil {
				return
			}
			if err := rc.Flush(); err != nil {
				return
			}
		case <-ctx.Done():
			return
		}
	}
}

// writeEventError writes the error event that ends a stream of events.
func writeEventError(w http.ResponseWriter, rc *http.ResponseController, msg string) {
	b, _ := json.Marshal(apiError{Error: msg, Code: "follow_failed"})
	_ = rc.SetWriteDeadline(time.Now().Add(followWriteTimeout))
	fmt.Fprintf(w, "event: error\ndata: %s\n\n", b)
	_ = rc.Flush()
}

// eventsRow is a queue's events setting (task.Queue.SetEvents): max_len is
// about how many of the latest events it keeps, 0 when they are off.
type eventsRow struct {
	Enabled bool `json:"enabled"`
	MaxLen  int  `json:"max_len"`
}

// setEvents turns the queue's events on or off live (task.Queue.SetEvents)
// and answers the queue as GET does: body {"enabled": true, "max_len": N}
// (N 0 or missing: task.DefaultEventsCap) or {"enabled": false}, which
// keeps the history already written.
func (h *handler) setEvents(w http.ResponseWriter, r *http.Request) {
	h.changeQueue(w, r, func(ctx context.Context, q *rawQueue) error {
		var req struct {
			Enabled *bool `json:"enabled"`
			MaxLen  *int  `json:"max_len"`
		}
		if err := h.readObject(w, r, &req); err != nil {
			return err
		}
		n := 0
		switch {
		case req.Enabled == nil:
			return refuse(w, "bad_json", errors.New(`request body: field "enabled" is missing (true or false)`))
		case !*req.Enabled && req.MaxLen != nil:
			return refuse(w, "bad_events", errors.New(`request body: field "max_len" goes only with "enabled": true`))
		case !*req.Enabled:
			n = -1
		case req.MaxLen != nil && *req.MaxLen < 0:
			return refuse(w, "bad_events", fmt.Errorf(`request body: field "max_len" %d: want 0 (the default, %d) to %d`,
				*req.MaxLen, task.DefaultEventsCap, task.MaxEventsCap))
		case req.MaxLen != nil:
			n = *req.MaxLen
		}
		err := q.SetEvents(ctx, n)
		if errors.Is(err, task.ErrBadSetting) {
			return refuse(w, "bad_events", err)
		}
		return err
	})
}
