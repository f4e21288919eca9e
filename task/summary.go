package task

import (
	"context"
	"strconv"
	"time"

	"github.com/leatdev/leat/app"
	"github.com/leatdev/leat/internal/keys"
	"github.com/redis/go-redis/v9"
)

// Summary is what a queue's overview shows: its definition, its counts per
// state and its pause, read together.
type Summary struct {
	Definition Definition
	Counts     map[State]int64
	Paused     bool
	PausedAt   time.Time // zero when not paused
}

// Summary returns the queue's counts per state and its pause in one round
// trip (Counts and Paused make one each).
func (q *core) Summary(ctx context.Context) (Summary, error) {
	pipe := q.rdb.Pipeline()
	r := queueReads(ctx, pipe, q.ks, q.name)
	if _, err := pipe.Exec(ctx); err != nil && !isNil(err) {
		return Summary{}, err
	}
	return r.summary(q.Definition())
}

// Summaries returns the summary of every queue of a recorded in Redis, by
// name, in two round trips whatever their number: the registry, then the
// counts and pauses of all.
func Summaries(ctx context.Context, a *app.App) ([]Summary, error) {
	defs, err := Queues(ctx, a)
	if err != nil || len(defs) == 0 {
		return nil, err
	}
	cfg := a.Config()
	ks := keys.New(cfg.KeyPrefix, cfg.Name)
	pipe := a.Client().Pipeline()
	reads := make([]summaryReads, len(defs))
	for i, d := range defs {
		reads[i] = queueReads(ctx, pipe, ks, d.Name)
	}
	if _, err := pipe.Exec(ctx); err != nil && !isNil(err) {
		return nil, err
	}
	out := make([]Summary, len(defs))
	for i, d := range defs {
		if out[i], err = reads[i].summary(d); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// summaryReads are the commands of a queue's summary, queued on a pipeline.
type summaryReads struct {
	counts *redis.MapStringStringCmd
	paused *redis.StringCmd
}

func queueReads(ctx context.Context, pipe redis.Pipeliner, ks keys.Space, name string) summaryReads {
	return summaryReads{
		counts: pipe.HGetAll(ctx, ks.TaskCounts(name)),
		paused: pipe.HGet(ctx, ks.TaskConfig(name), pausedField),
	}
}

func (r summaryReads) summary(d Definition) (Summary, error) {
	m, err := r.counts.Result()
	if err != nil {
		return Summary{}, err
	}
	s := Summary{Definition: d, Counts: countsOf(m)}
	at, err := r.paused.Result()
	switch {
	case isNil(err):
	case err != nil:
		return Summary{}, err
	default:
		ms, _ := strconv.ParseInt(at, 10, 64)
		s.Paused, s.PausedAt = true, time.UnixMilli(ms)
	}
	return s, nil
}
