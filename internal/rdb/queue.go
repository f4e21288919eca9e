package rdb

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/redis/go-redis/v9"
)

// QueueKeys names what the inspector reads of one task queue.
type QueueKeys struct {
	Counts   string   // hash of tasks per state
	Levels   []string // ready stream of each priority level
	Group    string   // the consumer group of the ready streams
	Finished []string // finished-task counters to read
	Config   string   // hash of live settings (PausedField, RateField, ConcurrencyField)
	Leader   string   // the lease of the queue's leader (KeySpace.LeaderOf)
	Workers  string   // sorted set of the running workers' last beats (KeySpace.TaskWorkers)
}

// QueueState is what Redis says of one task queue.
type QueueState struct {
	Counts   map[string]int64 // tasks per state (HGETALL of the counts hash)
	Levels   []QueueLevel
	Finished []int64 // each counter of QueueKeys.Finished (0 when missing)
	// PausedMS is the Unix ms the queue was paused at; 0 when it is not.
	PausedMS int64
	// LiveRate is the rate limit set live (field "rate": "N WINDOW_MS");
	// "" when none is.
	LiveRate string
	// LiveConcurrency is the concurrency per worker set live; "" when none is.
	LiveConcurrency string
	// Leader is the value of the queue's leader lease (a random token and
	// the holder's worker ID); "" when no worker holds it.
	Leader string
	// Beats are the last beats of the workers running the queue, in Unix
	// ms of the server's clock, by worker ID.
	Beats map[string]int64
}

// QueueLevel is what Redis says of one ready stream of a task queue.
type QueueLevel struct {
	// Delivered is the number of entries delivered to a worker and not
	// acknowledged (XPENDING summary): tasks running, or taken by a worker
	// that died and not reclaimed yet.
	Delivered int64
	// OldestDeliveredID is the smallest of those entries' IDs; "" when none.
	OldestDeliveredID string
	// OldestReadyID is the first entry after the group's last delivered ID
	// (XRANGE (LAST + COUNT 1): the oldest entry no worker took yet; ""
	// when none waits.
	OldestReadyID string
	// Consumers are the group's consumers on this stream, the workers that
	// read it (XINFO CONSUMERS): entries pending with each, and how long
	// since Redis last saw a read give it entries or a claim there.
	Consumers []redis.XInfoConsumer
}

// Queues reads the state of task queues in two pipelined round trips: first
// HGETALL of the counts, XINFO GROUPS, XPENDING (summary form) and XINFO
// CONSUMERS of each ready stream, MGET of the finished-task counters, GET
// of the leader lease and ZRANGE of the workers' beats;
// then XRANGE with COUNT 1 from each stream's last delivered ID. Every
// command is O(1) or O(log N) per key but MGET, O(counters), and XINFO
// CONSUMERS and ZRANGE, O(workers); nothing scans. A missing stream or group reads as
// empty.
func Queues(ctx context.Context, c redis.UniversalClient, qs []QueueKeys) ([]QueueState, error) {
	type level struct {
		groups    *redis.Cmd
		pending   *redis.XPendingCmd
		consumers *redis.XInfoConsumersCmd
		first     *redis.XMessageSliceCmd
	}
	pipe := c.Pipeline()
	counts := make([]*redis.MapStringStringCmd, len(qs))
	live := make([]*redis.SliceCmd, len(qs))
	leaders := make([]*redis.StringCmd, len(qs))
	beats := make([]*redis.ZSliceCmd, len(qs))
	finished := make([]*redis.SliceCmd, len(qs))
	levels := make([][]level, len(qs))
	for i, q := range qs {
		counts[i] = pipe.HGetAll(ctx, q.Counts)
		if q.Config != "" {
			live[i] = pipe.HMGet(ctx, q.Config, PausedField, RateField, ConcurrencyField)
		}
		if len(q.Finished) > 0 {
			finished[i] = pipe.MGet(ctx, q.Finished...)
		}
		if q.Leader != "" {
			leaders[i] = pipe.Get(ctx, q.Leader)
		}
		if q.Workers != "" {
			beats[i] = pipe.ZRangeWithScores(ctx, q.Workers, 0, -1)
		}
		levels[i] = make([]level, len(q.Levels))
		for l, k := range q.Levels {
			levels[i][l].groups = pipe.Do(ctx, "XINFO", "GROUPS", k)
			levels[i][l].pending = pipe.XPending(ctx, k, q.Group)
			levels[i][l].consumers = pipe.XInfoConsumers(ctx, k, q.Group)
		}
	}
	_, _ = pipe.Exec(ctx) // errors are read per command
	out := make([]QueueState, len(qs))
	pipe = c.Pipeline()
	firsts := 0
	for i, q := range qs {
		m, err := counts[i].Result()
		if err != nil {
			return nil, fmt.Errorf("HGETALL %s: %w", q.Counts, err)
		}
		st := QueueState{Counts: make(map[string]int64, len(m)), Levels: make([]QueueLevel, len(q.Levels)),
			Finished: make([]int64, len(q.Finished))}
		for k, v := range m {
			st.Counts[k], _ = strconv.ParseInt(v, 10, 64)
		}
		if live[i] != nil {
			vs, err := live[i].Result()
			if err != nil {
				return nil, fmt.Errorf("HMGET %s paused rate concurrency: %w", q.Config, err)
			}
			if v, ok := vs[0].(string); ok {
				st.PausedMS, _ = strconv.ParseInt(v, 10, 64)
			}
			st.LiveRate, _ = vs[1].(string)
			st.LiveConcurrency, _ = vs[2].(string)
		}
		if leaders[i] != nil {
			v, err := leaders[i].Result()
			if err != nil && !errors.Is(err, redis.Nil) {
				return nil, fmt.Errorf("GET %s: %w", q.Leader, err)
			}
			st.Leader = v
		}
		if beats[i] != nil {
			zs, err := beats[i].Result()
			if err != nil {
				return nil, fmt.Errorf("ZRANGE %s: %w", q.Workers, err)
			}
			st.Beats = make(map[string]int64, len(zs))
			for _, z := range zs {
				w, _ := z.Member.(string)
				st.Beats[w] = int64(z.Score)
			}
		}
		if finished[i] != nil {
			vs, err := finished[i].Result()
			if err != nil {
				return nil, fmt.Errorf("MGET %s...: %w", q.Finished[0], err)
			}
			for j, v := range vs {
				if s, ok := v.(string); ok {
					st.Finished[j], _ = strconv.ParseInt(s, 10, 64)
				}
			}
		}
		for l, k := range q.Levels {
			raw, err := levels[i][l].groups.Result()
			if IsNoKey(err) {
				continue // nothing enqueued at this level yet
			}
			if err != nil {
				return nil, fmt.Errorf("XINFO GROUPS %s: %w", k, err)
			}
			gs, err := parseGroupStates(raw)
			if err != nil {
				return nil, fmt.Errorf("XINFO GROUPS %s: %w", k, err)
			}
			start := "-" // no group yet: no entry was ever delivered
			for _, g := range gs {
				if g.Name == q.Group {
					start = "(" + g.LastDeliveredID
				}
			}
			p, err := levels[i][l].pending.Result()
			switch {
			case err == nil:
				st.Levels[l].Delivered, st.Levels[l].OldestDeliveredID = p.Count, p.Lower
			case !IsNoGroup(err) && !IsNoKey(err) && !errors.Is(err, redis.Nil):
				return nil, fmt.Errorf("XPENDING %s %s: %w", k, q.Group, err)
			}
			cs, err := levels[i][l].consumers.Result()
			switch {
			case err == nil:
				st.Levels[l].Consumers = cs
			case !IsNoGroup(err) && !IsNoKey(err):
				return nil, fmt.Errorf("XINFO CONSUMERS %s %s: %w", k, q.Group, err)
			}
			levels[i][l].first = pipe.XRangeN(ctx, k, start, "+", 1)
			firsts++
		}
		out[i] = st
	}
	if firsts == 0 {
		return out, nil
	}
	_, _ = pipe.Exec(ctx)
	for i, q := range qs {
		for l, k := range q.Levels {
			cmd := levels[i][l].first
			if cmd == nil {
				continue
			}
			ms, err := cmd.Result()
			if err != nil && !IsNoKey(err) {
				return nil, fmt.Errorf("XRANGE %s: %w", k, err)
			}
			if len(ms) > 0 {
				out[i].Levels[l].OldestReadyID = ms[0].ID
			}
		}
	}
	return out, nil
}
