// Summary: the reads of a queue's summary (counts, live settings, leader),
// many queues on one pipeline.

package rdb

import (
	"context"
	"errors"

	"github.com/redis/go-redis/v9"
)

// SummaryKeys are the keys a queue's summary reads.
type SummaryKeys struct {
	Counts string // KeySpace.TaskCounts
	Config string // KeySpace.TaskConfig
	Leader string // the leader key of the queue's lease
}

// A SummaryRead is what a queue's summary read, each part with its error.
type SummaryRead struct {
	Counts    map[string]string
	CountsErr error
	Live      []any // PausedField, RateField, ConcurrencyField, GlobalField, EventsField: a string or nil
	LiveErr   error
	Leader    string
	LeaderErr error // redis.Nil: no leader
}

// ReadSummaries reads the summary of each of qs on one pipeline (HGETALL
// counts, HMGET config, GET leader per queue). It fails when the pipeline
// does, but for a missing key.
func ReadSummaries(ctx context.Context, c redis.Cmdable, qs []SummaryKeys) ([]SummaryRead, error) {
	pipe := c.Pipeline()
	type cmds struct {
		counts *redis.MapStringStringCmd
		live   *redis.SliceCmd
		leader *redis.StringCmd
	}
	cs := make([]cmds, len(qs))
	for i, q := range qs {
		cs[i] = cmds{
			counts: pipe.HGetAll(ctx, q.Counts),
			live:   pipe.HMGet(ctx, q.Config, PausedField, RateField, ConcurrencyField, GlobalField, EventsField),
			leader: pipe.Get(ctx, q.Leader),
		}
	}
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return nil, err
	}
	out := make([]SummaryRead, len(qs))
	for i, c := range cs {
		r := &out[i]
		r.Counts, r.CountsErr = c.counts.Result()
		r.Live, r.LiveErr = c.live.Result()
		r.Leader, r.LeaderErr = c.leader.Result()
	}
	return out, nil
}
