package task

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"strconv"
	"time"

	streamcore "github.com/leatdev/leat/internal/core"
	"github.com/leatdev/leat/internal/rdb"
	"github.com/redis/go-redis/v9"
)

// Kinds of an Update.
const (
	KindProgress = "progress" // a progress report (Task.Progress)
	KindPartial  = "partial"  // a partial result (Task.Partial)
	KindDone     = "done"     // the task finished: Info holds its status
)

// UpdatesCap bounds the stream of a task's updates: about this many of the
// latest are kept.
const UpdatesCap = 1000

// reportTimeout bounds one report's round trip to Redis.
const reportTimeout = 5 * time.Second

// A reporter records a running task's updates.
type reporter interface {
	report(ctx context.Context, kind string, data json.RawMessage) error
}

// Progress reports the task's progress, any JSON value (a percentage, a
// stage...): it becomes the Progress of the task's Info and an update that
// Follow yields. A report of a task no longer running is dropped. A
// json.RawMessage is recorded as it is, and refused when it is not JSON or
// a reader would decode it with replacements (bytes that are not UTF-8, an
// escaped lone surrogate).
func (t *Task[P]) Progress(v any) error { return t.send(KindProgress, v) }

// Partial appends a partial result, any JSON value, to the task's updates
// (see Follow), in order with its progress reports. The updates are kept,
// about the last UpdatesCap of them, for the task's timeout plus its
// retention.
func (t *Task[P]) Partial(v any) error { return t.send(KindPartial, v) }

func (t *Task[P]) send(kind string, v any) error {
	if t.rep == nil {
		return nil
	}
	b, ok := v.(json.RawMessage)
	if ok && !json.Valid(b) {
		return fmt.Errorf("task %s: %s %q is not JSON", t.ID, kind, clip(b))
	}
	if !ok {
		var err error
		if b, err = json.Marshal(v); err != nil {
			return fmt.Errorf("task %s: encode %s: %w", t.ID, kind, err)
		}
	}
	if err := streamcore.CheckJSONText(b); err != nil {
		return fmt.Errorf("task %s: %s: %w", t.ID, kind, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), reportTimeout)
	defer cancel()
	return t.rep.report(ctx, kind, b)
}

// redisReporter records the updates of a task run by a worker.
type redisReporter struct {
	q       *core
	id      string
	attempt int
	ttl     time.Duration
}

func (q *core) updates(f *rdb.Fetched) reporter {
	timeout := f.Timeout
	if timeout <= 0 {
		timeout = q.set.timeout
	}
	return &redisReporter{q: q, id: f.ID, attempt: f.Attempt, ttl: timeout + q.set.retention}
}

func (r *redisReporter) report(ctx context.Context, kind string, data json.RawMessage) error {
	q := r.q
	err := rdb.AppendUpdate(ctx, q.rdb, q.ks.TaskPrefix(q.name)+r.id, q.ks.TaskUpdatesPrefix(q.name)+r.id,
		kind, string(data), UpdatesCap, r.ttl, r.attempt)
	if err != nil {
		return fmt.Errorf("task %s: record %s: %w", r.id, kind, err)
	}
	return nil
}

// An Update is a progress report or partial result of a task, or its end.
type Update struct {
	Kind    string          `json:"kind"`              // KindProgress, KindPartial or KindDone
	Data    json.RawMessage `json:"data,omitempty"`    // the value reported
	Attempt int             `json:"attempt,omitempty"` // the attempt that reported it
	Info    *Info           `json:"info,omitempty"`    // KindDone: the task's final status
}

// followBlock bounds one blocking read of Follow between status checks.
const followBlock = 250 * time.Millisecond

// Follow yields the updates of task id in the order they were reported,
// those already recorded first, then as they come, and ends with a
// KindDone update once the task is finished. It yields an error (and
// stops) when the task is unknown or ctx ends.
func (q *core) Follow(ctx context.Context, id string) iter.Seq2[Update, error] {
	return func(yield func(Update, error) bool) {
		stream := q.ks.TaskUpdatesPrefix(q.name) + id
		last := "0"
		read := func(block time.Duration) (int, error) {
			res, err := rdb.ReadUpdates(ctx, q.rdb, stream, last, 256, block)
			if err != nil {
				return 0, err
			}
			n := 0
			for _, s := range res {
				for _, m := range s.Messages {
					last = m.ID
					n++
					u, err := updateOf(id, m.Values)
					if err != nil {
						return n, err
					}
					if !yield(u, nil) {
						return n, errStopFollow
					}
				}
			}
			return n, nil
		}
		hash := q.ks.TaskPrefix(q.name) + id
		for {
			// The state alone between reads (HGET), not the whole hash with
			// its payload; the whole status once, at the end.
			s, err := rdb.TaskState(ctx, q.rdb, hash)
			switch {
			case errors.Is(err, redis.Nil) || err == nil && s == "":
				err = fmt.Errorf("task %q in queue %q: %w", id, q.name, ErrNotFound)
				fallthrough
			case err != nil:
				yield(Update{}, err)
				return
			}
			if State(s).Final() {
				// Drain what was recorded before the end.
				for {
					n, err := read(-1)
					if errors.Is(err, errStopFollow) {
						return
					}
					if err != nil {
						yield(Update{}, err)
						return
					}
					if n == 0 {
						break
					}
				}
				in, err := q.Info(ctx, id)
				if err != nil {
					yield(Update{}, err)
					return
				}
				yield(Update{Kind: KindDone, Info: in}, nil)
				return
			}
			if _, err := read(followBlock); err != nil {
				if !errors.Is(err, errStopFollow) {
					if ctx.Err() != nil {
						err = ctx.Err()
					}
					yield(Update{}, err)
				}
				return
			}
		}
	}
}

var errStopFollow = errors.New("stop following")

// updateOf reads an entry of the updates stream of task id. Only a worker
// writes it, checked; an entry of another kind, or whose value is not JSON
// (a corrupt or hand-written one), is an error rather than an update that
// cannot be encoded.
func updateOf(id string, values map[string]any) (Update, error) {
	k, _ := values["k"].(string)
	d, _ := values["d"].(string)
	a, _ := values["a"].(string)
	if k != KindProgress && k != KindPartial {
		return Update{}, fmt.Errorf("task %s: update of unknown kind %q", id, k)
	}
	if !json.Valid([]byte(d)) {
		return Update{}, fmt.Errorf("task %s: %s update is not JSON", id, k)
	}
	at, err := strconv.Atoi(a)
	if err != nil || at < 1 {
		return Update{}, fmt.Errorf("task %s: %s update of attempt %q", id, k, a)
	}
	return Update{Kind: k, Data: json.RawMessage(d), Attempt: at}, nil
}

// clip shortens b for an error message.
func clip(b []byte) string {
	if len(b) > 200 {
		return string(b[:200]) + "…"
	}
	return string(b)
}
