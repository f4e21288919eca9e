package task

import (
	"context"
	"strconv"
	"time"

	"github.com/leatdev/leat/app"
	"github.com/leatdev/leat/internal/lease"
	"github.com/leatdev/leat/internal/rdb"
)

// Summary is what a queue's overview shows: its definition, its counts per
// state, its pause and its rate limit, read together.
type Summary struct {
	Definition Definition
	Counts     map[State]int64
	Paused     bool
	PausedAt   time.Time // zero when not paused
	// Rate is the rate limit that applies: the one set live (LiveRate
	// true, see Queue.SetRate), else the definition's Rate option.
	Rate     RateLimit
	LiveRate bool
	// Concurrency is the number of tasks each worker runs at once: the one
	// set live (LiveConcurrency true, see Queue.SetConcurrency), else the
	// definition's (a worker's ConcurrencyFunc may change its own).
	Concurrency     int
	LiveConcurrency bool
	// GlobalConcurrency caps the tasks running at once over all workers
	// (Queue.SetGlobalConcurrency); 0 is no cap.
	GlobalConcurrency int
	// EventsCap is the length cap of the queue's events (Queue.SetEvents);
	// 0 when they are off.
	EventsCap int
	// Leader is the worker ID of the queue's leader, which promotes its due
	// tasks, fires its cron schedules and reclaims the tasks of dead
	// workers; "" when no worker holds the queue's lease (none handles it).
	Leader string
}

// Summary returns the queue's counts per state, its pause, its rate limit,
// its concurrency and its leader in one round trip (Counts, Paused and LiveRate make
// one each).
func (q *core) Summary(ctx context.Context) (Summary, error) {
	r, err := rdb.ReadSummaries(ctx, q.rdb, []rdb.SummaryKeys{summaryKeys(q.ks, q.name)})
	if err != nil {
		return Summary{}, err
	}
	return summaryOf(r[0], q.Definition())
}

// Summaries returns the summary of every queue of a recorded in Redis, by
// name, in two round trips whatever their number: the registry, then the
// counts and live settings of all.
func Summaries(ctx context.Context, a *app.App) ([]Summary, error) {
	defs, err := Queues(ctx, a)
	if err != nil || len(defs) == 0 {
		return nil, err
	}
	cfg := a.Config()
	ks := rdb.NewKeySpace(cfg.KeyPrefix, cfg.Name)
	qs := make([]rdb.SummaryKeys, len(defs))
	for i, d := range defs {
		qs[i] = summaryKeys(ks, d.Name)
	}
	reads, err := rdb.ReadSummaries(ctx, a.Client(), qs)
	if err != nil {
		return nil, err
	}
	out := make([]Summary, len(defs))
	for i, d := range defs {
		if out[i], err = summaryOf(reads[i], d); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// summaryKeys returns the keys of queue name's summary.
func summaryKeys(ks rdb.KeySpace, name string) rdb.SummaryKeys {
	return rdb.SummaryKeys{Counts: ks.TaskCounts(name), Config: ks.TaskConfig(name), Leader: ks.LeaderOf(rdb.TaskLease(name))}
}

func summaryOf(r rdb.SummaryRead, d Definition) (Summary, error) {
	m, err := r.Counts, r.CountsErr
	if err != nil {
		return Summary{}, err
	}
	s := Summary{Definition: d, Counts: countsOf(m), Rate: RateLimit{N: d.Rate, Window: d.RateWindow}, Concurrency: d.Concurrency}
	live, err := r.Live, r.LiveErr
	if err != nil {
		return Summary{}, err
	}
	if at, ok := live[0].(string); ok {
		ms, _ := strconv.ParseInt(at, 10, 64)
		s.Paused, s.PausedAt = true, time.UnixMilli(ms)
	}
	if v, ok := live[1].(string); ok {
		if s.Rate, s.LiveRate, err = parseLiveRate(v); err != nil {
			return Summary{}, err
		}
	}
	if v, ok := live[2].(string); ok {
		if n, ok := rdb.ParseLiveConcurrency(v); ok {
			s.Concurrency, s.LiveConcurrency = n, true
		}
	}
	if v, ok := live[3].(string); ok {
		s.GlobalConcurrency, _ = rdb.ParseLiveGlobal(v)
	}
	if v, ok := live[4].(string); ok {
		n, _ := strconv.Atoi(v)
		s.EventsCap = max(n, 0)
	}
	switch v, err := r.Leader, r.LeaderErr; {
	case err == nil:
		s.Leader = lease.Holder(v)
	case !isNil(err):
		return Summary{}, err
	}
	return s, nil
}
