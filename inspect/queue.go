package inspect

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/leatdev/leat/internal/lease"
	"github.com/leatdev/leat/internal/rdb"
)

// ErrUnknownQueue is returned by Queue for a task queue the registry does
// not hold.
var ErrUnknownQueue = errors.New("inspect: unknown task queue")

// Throughput windows.
const (
	minute      = time.Minute
	fiveMinutes = 5 * time.Minute
)

// queueDef is what the task queue registry records (task.Definition).
type queueDef struct {
	Name   string `json:"name"`
	Keyed  bool   `json:"keyed"`
	Levels []struct {
		Name   string
		Weight int
	} `json:"levels"`
	Strict      bool          `json:"strict"`
	Concurrency int           `json:"concurrency"`
	Rate        int           `json:"rate"`
	RateWindow  time.Duration `json:"rate_window"`
	KeyRate     int           `json:"key_rate"`
	KeyWindow   time.Duration `json:"key_window"`
	KeyConc     int           `json:"key_concurrency"`
	KeyBacklog  int           `json:"max_key_backlog"`
}

// queueDefs decodes the task queue registry, sorted by name.
func queueDefs(snap rdb.AppSnapshot) ([]queueDef, error) {
	defs := make([]queueDef, 0, len(snap.Queues))
	for _, name := range slices.Sorted(maps.Keys(snap.Queues)) {
		var d queueDef
		if err := json.Unmarshal([]byte(snap.Queues[name]), &d); err != nil {
			return nil, fmt.Errorf("registry entry of task queue %q is not valid JSON: %w", name, err)
		}
		d.Name = name
		if len(d.Levels) == 0 {
			d.Levels = append(d.Levels, struct {
				Name   string
				Weight int
			}{"default", 1})
		}
		defs = append(defs, d)
	}
	return defs, nil
}

// Queue reads the state of task queue name. It fails with an error
// matching ErrUnknownQueue when the registry does not hold the queue.
//
// Cost: the registry's round trip, then two pipelined round trips: HGETALL
// of the counts, XINFO GROUPS and XPENDING (summary form) per priority
// level and one MGET of the finished-task counters (at most 31 keys); then
// XRANGE with COUNT 1 per level.
func (i *Inspector) Queue(ctx context.Context, name string) (*QueueReport, error) {
	snap, err := rdb.App(ctx, i.c, i.k)
	if err != nil {
		return nil, err
	}
	defs, err := queueDefs(snap)
	if err != nil {
		return nil, err
	}
	k := slices.IndexFunc(defs, func(d queueDef) bool { return d.Name == name })
	if k < 0 {
		if len(defs) == 0 {
			return nil, fmt.Errorf("%w %q: app %q has no task queue in its registry", ErrUnknownQueue, name, i.app)
		}
		names := make([]string, len(defs))
		for j, d := range defs {
			names[j] = d.Name
		}
		return nil, fmt.Errorf("%w %q: app %q has %s", ErrUnknownQueue, name, i.app, strings.Join(names, ", "))
	}
	rs, err := i.queues(ctx, defs[k:k+1], snap.Now)
	if err != nil {
		return nil, err
	}
	return &rs[0], nil
}

// Queues reads the state of the task queues named, or of every task queue
// of the registry when none is named, sorted by name, at the cost of Queue
// for all of them together (the same two pipelined round trips). Names the
// registry does not hold are skipped.
func (i *Inspector) Queues(ctx context.Context, names ...string) ([]QueueReport, error) {
	snap, err := rdb.App(ctx, i.c, i.k)
	if err != nil {
		return nil, err
	}
	defs, err := queueDefs(snap)
	if err != nil {
		return nil, err
	}
	if len(names) > 0 {
		defs = slices.DeleteFunc(defs, func(d queueDef) bool { return !slices.Contains(names, d.Name) })
	}
	return i.queues(ctx, defs, snap.Now)
}

// queues reads the reports of defs at server time now.
func (i *Inspector) queues(ctx context.Context, defs []queueDef, now time.Time) ([]QueueReport, error) {
	_, start5 := rdb.FinishedKeys("", now, fiveMinutes)
	k1, start1 := rdb.FinishedKeys("", now, minute)
	n1 := len(k1) // the last n1 counters of the five minutes are the last minute's
	qk := make([]rdb.QueueKeys, len(defs))
	for j, d := range defs {
		levels := make([]string, len(d.Levels))
		for l := range levels {
			levels[l] = i.k.TaskStream(d.Name, l)
		}
		fin, _ := rdb.FinishedKeys(i.k.TaskFinishedPrefix(d.Name), now, fiveMinutes)
		qk[j] = rdb.QueueKeys{Counts: i.k.TaskCounts(d.Name), Levels: levels, Group: rdb.TaskGroup, Finished: fin, Config: i.k.TaskConfig(d.Name),
			Leader: i.k.LeaderOf(rdb.TaskLease(d.Name)), Workers: i.k.TaskWorkers(d.Name)}
	}
	states, err := rdb.Queues(ctx, i.c, qk)
	if err != nil {
		return nil, err
	}
	out := make([]QueueReport, len(defs))
	for j, d := range defs {
		st := states[j]
		r := QueueReport{
			App: i.app, Time: now.UTC(), Strict: d.Strict, Levels: make([]QueueLevel, len(d.Levels)),
			QueueSummary: QueueSummary{Name: d.Name, Keyed: d.Keyed, Concurrency: d.Concurrency,
				Counts: make(map[string]int64, len(taskStates))},
			Rate: limitOf(d.Rate, d.RateWindow), KeyRate: limitOf(d.KeyRate, d.KeyWindow),
			MaxKeyBacklog: d.KeyBacklog,
		}
		if d.Keyed {
			r.KeyConcurrency = max(d.KeyConc, 1)
		}
		for _, s := range taskStates {
			r.Counts[s] = st.Counts[s]
		}
		if st.PausedMS > 0 {
			at := time.UnixMilli(st.PausedMS).UTC()
			r.PausedAt = &at
		}
		if n, ok := rdb.ParseLiveConcurrency(st.LiveConcurrency); ok {
			r.Concurrency, r.ConcurrencyLive = n, true
		}
		if st.LiveRate != "" {
			if l, err := rdb.ParseLiveRate(st.LiveRate); err == nil {
				r.Rate, r.RateLive = limitOf(l.N, l.Window), true
			}
		}
		var all, last int64
		for x, n := range st.Finished {
			all += n
			if x >= len(st.Finished)-n1 {
				last += n
			}
		}
		r.Throughput = Throughput{LastMinute: rate(last, now.Sub(start1)), LastFiveMinute: rate(all, now.Sub(start5))}
		r.Workers = taskWorkers(d.Name, st, now, i.alive)
		if st.Leader != "" {
			r.Leader = lease.Holder(st.Leader)
		}
		for l, ld := range d.Levels {
			s := st.Levels[l]
			ql := QueueLevel{Level: l, Name: ld.Name, Weight: ld.Weight, OldestReadyID: s.OldestReadyID,
				Delivered: s.Delivered, OldestDeliveredID: s.OldestDeliveredID}
			ql.OldestReadyAgeMS = ageOf(s.OldestReadyID, now)
			ql.OldestDeliveredAgeMS = ageOf(s.OldestDeliveredID, now)
			r.OldestReadyAgeMS = maxAge(r.OldestReadyAgeMS, ql.OldestReadyAgeMS)
			r.OldestDeliveredAgeMS = maxAge(r.OldestDeliveredAgeMS, ql.OldestDeliveredAgeMS)
			r.Delivered += s.Delivered
			r.Levels[l] = ql
		}
		out[j] = r
	}
	return out, nil
}

// limitOf returns the rate limit of n per window; nil for none.
func limitOf(n int, window time.Duration) *RateLimit {
	if n <= 0 {
		return nil
	}
	return &RateLimit{Tasks: n, WindowMS: window.Milliseconds()}
}

// taskWorkers returns the workers of queue from its workers' beats and the
// consumers of its ready streams: those heard of within alive (a beat, a
// read or a claim), and those with entries delivered.
func taskWorkers(queue string, st rdb.QueueState, now time.Time, alive time.Duration) []TaskWorker {
	byName := map[string]*TaskWorker{}
	heard := func(name string, idle int64) *TaskWorker {
		w := byName[name]
		if w == nil {
			w = &TaskWorker{Worker: name, Queue: queue, IdleMS: idle}
			byName[name] = w
		}
		w.IdleMS = min(w.IdleMS, idle)
		return w
	}
	for name, ms := range st.Beats {
		heard(name, max(now.UnixMilli()-ms, 0))
	}
	for _, l := range st.Levels {
		for _, c := range l.Consumers {
			heard(c.Name, c.Idle.Milliseconds()).Running += c.Pending
		}
	}
	out := []TaskWorker{}
	for _, name := range slices.Sorted(maps.Keys(byName)) {
		w := byName[name]
		w.Alive = time.Duration(w.IdleMS)*time.Millisecond < alive
		if w.Alive || w.Running > 0 {
			out = append(out, *w)
		}
	}
	return out
}

// taskStates are the states of a task (task.States), each a key of
// QueueSummary.Counts.
var taskStates = []string{"pending", "scheduled", "active", "retrying", "succeeded", "failed", "dead", "cancelled"}

// ageOf returns the age at now of entry id; nil for "".
func ageOf(id string, now time.Time) *int64 {
	if id == "" {
		return nil
	}
	ms, ok := idMillis(id)
	if !ok {
		return nil
	}
	return ptr(max(now.UnixMilli()-ms, 0))
}

func maxAge(a, b *int64) *int64 {
	if a == nil {
		return b
	}
	if b == nil {
		return a
	}
	return ptr(max(*a, *b))
}

func rate(n int64, span time.Duration) Rate {
	r := Rate{Finished: n, Seconds: span.Seconds()}
	if r.Seconds > 0 {
		r.PerSecond = float64(n) / r.Seconds
	}
	return r
}
