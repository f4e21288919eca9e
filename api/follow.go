package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/leatdev/leat/task"
)

// DefaultMaxFollowers is the number of clients that can follow task events
// at once (Options.MaxFollowers).
const DefaultMaxFollowers = 1000

// followRetryAfter is the Retry-After of a follower refused over the cap.
const followRetryAfter = 5 * time.Second

// followWriteTimeout bounds each write of events to a follower: one whose
// connection takes no more for this long is disconnected.
const followWriteTimeout = 10 * time.Second

// followKeep bounds the events kept in memory per followed task: the
// updates Redis keeps (about task.UpdatesCap) and the final one. A
// follower further behind than this is disconnected.
const followKeep = task.UpdatesCap + 1

// followers are the clients following task events, grouped by task: each
// followed task has one reader of its updates in Redis (task.Queue.Follow,
// one blocking read at a time), however many follow it, whose events every
// follower of the task writes out at its own pace.
//
// The reader appends each event, encoded once, to the task's log and wakes
// the followers; it never waits for one. A follower writes the log from the
// start (a late one gets every event kept, in order), then each new event.
// One that falls more than followKeep events behind is disconnected with
// an error event, one whose connection accepts nothing for
// followWriteTimeout without; a client reconnects to start over.
//
// The first follower of a task starts its reader; the last to leave stops
// it and waits for it to return, so that no reader outlives its followers.
type followers struct {
	max int
	log *slog.Logger // where a reader's failure goes (its followers get no detail)

	mu    sync.Mutex
	n     int                // followers connected, at most max
	tasks map[string]*follow // by queue and task ID
}

// follow is one followed task. Its fields past done are guarded by
// followers.mu.
type follow struct {
	key    string
	cancel context.CancelFunc // stops the reader
	done   chan struct{}      // closed when the reader returned

	subs   int           // its followers
	frames [][]byte      // events as written, from number base on
	base   int           // events dropped from the front of frames
	ended  bool          // the reader added its last event
	wake   chan struct{} // closed at each change, then replaced
}

func newFollowers(max int, log *slog.Logger) *followers {
	return &followers{max: max, log: log, tasks: map[string]*follow{}}
}

// reserve takes a follower's slot; false when all are taken.
func (fs *followers) reserve() bool {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	if fs.n >= fs.max {
		return false
	}
	fs.n++
	return true
}

// release gives back a slot taken by reserve.
func (fs *followers) release() {
	fs.mu.Lock()
	fs.n--
	fs.mu.Unlock()
}

// join adds a follower to task id of q, starting its reader when it is the
// first. A task nobody follows yet is read first, so that an unknown one is
// an error here rather than an event.
func (fs *followers) join(ctx context.Context, q *rawQueue, id string) (*follow, error) {
	key := q.Name() + "\x00" + id
	if f := fs.joinLive(key); f != nil {
		return f, nil
	}
	if _, err := q.Info(ctx, id); err != nil {
		return nil, err
	}
	fs.mu.Lock()
	defer fs.mu.Unlock()
	if f := fs.tasks[key]; f != nil && !f.ended {
		f.subs++
		return f, nil
	}
	// None, or one whose reader ended (the task finished, or reading
	// failed) and whose followers are leaving: a new reader, in case the
	// task was requeued since.
	rctx, cancel := context.WithCancel(context.Background())
	f := &follow{key: key, cancel: cancel, done: make(chan struct{}), subs: 1, wake: make(chan struct{})}
	fs.tasks[key] = f
	go fs.read(rctx, f, q, id)
	return f, nil
}

// joinLive adds a follower to the task's live follow, if there is one.
func (fs *followers) joinLive(key string) *follow {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	f := fs.tasks[key]
	if f == nil || f.ended {
		return nil
	}
	f.subs++
	return f
}

// leave removes a follower; the last one stops the reader and waits for it.
func (fs *followers) leave(f *follow) {
	fs.mu.Lock()
	f.subs--
	last := f.subs == 0
	if last && fs.tasks[f.key] == f {
		delete(fs.tasks, f.key)
	}
	fs.mu.Unlock()
	if last {
		f.cancel()
		<-f.done
	}
}

// read follows the task's updates and adds each, as an event, to f's log
// until the task is done, reading fails or the last follower left.
func (fs *followers) read(ctx context.Context, f *follow, q *rawQueue, id string) {
	defer close(f.done)
	n := 0
	for u, err := range q.Follow(ctx, id) {
		if err != nil {
			if ctx.Err() != nil {
				break
			}
			fs.add(f, fs.failed(q.Name(), id, err))
			break
		}
		n++
		b, _ := json.Marshal(updateView{Update: u, Info: viewInfo(u.Info)})
		fs.add(f, fmt.Appendf(nil, "id: %d\nevent: %s\ndata: %s\n\n", n, u.Kind, b))
	}
	fs.end(f)
}

// failed returns the error event that ends the events of task id when
// reading them failed. A task that is gone is said so; any other failure
// (Redis unreachable, refusing) goes to the log, as internalError does,
// since its text may name Redis's address or carry what Redis said.
func (fs *followers) failed(queue, id string, err error) []byte {
	msg := err.Error()
	if !errors.Is(err, task.ErrNotFound) {
		fs.log.Error("api: following task events failed", "queue", queue, "task", id, "err", err)
		msg = "reading the task's events failed: the server logged the details"
	}
	b, _ := json.Marshal(apiError{Error: msg, Code: "follow_failed"})
	return fmt.Appendf(nil, "event: error\ndata: %s\n\n", b)
}

// add appends an event to f's log, dropping the oldest beyond followKeep,
// and wakes its followers.
func (fs *followers) add(f *follow, frame []byte) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	f.frames = append(f.frames, frame)
	if over := len(f.frames) - followKeep; over > 0 {
		clear(f.frames[:over])
		f.frames = f.frames[over:]
		f.base += over
	}
	close(f.wake)
	f.wake = make(chan struct{})
}

// end marks f's log complete and wakes its followers.
func (fs *followers) end(f *follow) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	f.ended = true
	close(f.wake)
	f.wake = make(chan struct{})
}

// since returns the events of f from number next on, the channel closed at
// the next change, and whether the log is complete; behind when the events
// from next on are no longer kept. The events are a copy of the log's
// slice, which add changes in place (the frames themselves never change).
func (fs *followers) since(f *follow, next int) (frames [][]byte, wake <-chan struct{}, ended, behind bool) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	if next < f.base {
		return nil, nil, false, true
	}
	return slices.Clone(f.frames[next-f.base:]), f.wake, f.ended, false
}

// taskEvents streams the task's updates as server-sent events: "progress"
// and "partial" events as the handler reports them, then one "done" event
// with the task's final status (or one "error" event). The followers of a
// task share one reader of its updates (see followers).
func (h *handler) taskEvents(w http.ResponseWriter, r *http.Request) {
	if !h.follows.reserve() {
		w.Header().Set("Retry-After", strconv.Itoa(int(followRetryAfter/time.Second)))
		writeError(w, http.StatusServiceUnavailable, "too_many_followers",
			fmt.Sprintf("%d clients follow task events already, the most this server takes; try again later", h.follows.max))
		return
	}
	defer h.follows.release()
	q, id := h.findTask(w, r)
	if q == nil {
		return
	}
	f, err := h.follows.join(r.Context(), q, id)
	if err != nil {
		taskError(w, err)
		return
	}
	defer h.follows.leave(f)
	rc := http.NewResponseController(w)
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.Header().Set("X-Accel-Buffering", "no")
	_ = rc.SetWriteDeadline(time.Now().Add(followWriteTimeout))
	w.WriteHeader(http.StatusOK)
	if err := rc.Flush(); err != nil {
		return
	}
	next := 0
	for {
		frames, wake, ended, behind := h.follows.since(f, next)
		if behind {
			b, _ := json.Marshal(apiError{Error: fmt.Sprintf("this client fell more than %d events behind the task's updates; reconnect to read them from the start", followKeep), Code: "follower_behind"})
			_ = rc.SetWriteDeadline(time.Now().Add(followWriteTimeout))
			fmt.Fprintf(w, "event: error\ndata: %s\n\n", b)
			_ = rc.Flush()
			return
		}
		if len(frames) > 0 {
			// A deadline per frame: a follower that keeps reading, however
			// slowly through a big batch, is never cut; one that accepts
			// nothing for followWriteTimeout is.
			for _, fr := range frames {
				_ = rc.SetWriteDeadline(time.Now().Add(followWriteTimeout))
				if _, err := w.Write(fr); err != nil {
					return
				}
			}
			if err := rc.Flush(); err != nil {
				return
			}
			next += len(frames)
		}
		if ended {
			return
		}
		select {
		case <-wake:
		case <-r.Context().Done():
			return
		}
	}
}
