package rdb

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// The inspector's reads. Every figure comes from a command that costs O(1)
// per key, or O(partitions) per stream, sent in one pipelined round trip:
// XINFO STREAM (without FULL), XINFO GROUPS, XPENDING in its summary form,
// GET of locks, ZRANGE of the members, HGETALL of small hashes. Nothing
// scans entries or keys.

// PartitionState is what XINFO STREAM (without FULL) and XINFO GROUPS say
// about one partition stream.
type PartitionState struct {
	Exists  bool   // false when the stream key does not exist (nothing sent yet)
	Length  int64  // XINFO STREAM length
	Added   int64  // entries-added
	FirstID string // first-entry ID, "" when empty
	LastID  string // last-entry ID, "" when empty
	Groups  []GroupState
}

// Group returns the state of the consumer group name, and whether it exists.
func (s PartitionState) Group(name string) (GroupState, bool) {
	for _, g := range s.Groups {
		if g.Name == name {
			return g, true
		}
	}
	return GroupState{}, false
}

// GroupState is one entry of XINFO GROUPS, read from the raw reply so that
// counters Redis does not know (nil) are not read as 0.
type GroupState struct {
	Name            string
	Consumers       int64
	Pending         int64
	LastDeliveredID string
	EntriesRead     int64
	EntriesReadOK   bool // false when Redis does not know the counter
	Lag             int64
	LagOK           bool // false when Redis does not know the lag (or is older than 7)
}

// PartitionStates reads XINFO STREAM and XINFO GROUPS of each key in one
// pipelined round trip. A missing key is reported with Exists false.
func PartitionStates(ctx context.Context, c redis.UniversalClient, keys []string) ([]PartitionState, error) {
	pipe := c.Pipeline()
	infos := make([]*redis.XInfoStreamCmd, len(keys))
	groups := make([]*redis.Cmd, len(keys))
	for i, k := range keys {
		infos[i] = pipe.XInfoStream(ctx, k)
		groups[i] = pipe.Do(ctx, "XINFO", "GROUPS", k)
	}
	_, _ = pipe.Exec(ctx) // errors are read per command
	out := make([]PartitionState, len(keys))
	for i, k := range keys {
		info, err := infos[i].Result()
		if IsNoKey(err) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("XINFO STREAM %s: %w", k, err)
		}
		raw, err := groups[i].Result()
		if err != nil && !IsNoKey(err) {
			return nil, fmt.Errorf("XINFO GROUPS %s: %w", k, err)
		}
		gs, err := parseGroupStates(raw)
		if err != nil {
			return nil, fmt.Errorf("XINFO GROUPS %s: %w", k, err)
		}
		out[i] = PartitionState{
			Exists: true, Length: info.Length, Added: info.EntriesAdded,
			FirstID: info.FirstEntry.ID, LastID: info.LastEntry.ID, Groups: gs,
		}
	}
	return out, nil
}

// parseGroupStates parses a raw XINFO GROUPS reply, RESP2 (arrays of field,
// value pairs) or RESP3 (maps).
func parseGroupStates(v any) ([]GroupState, error) {
	groups, err := groupFields(v)
	if err != nil {
		return nil, err
	}
	out := make([]GroupState, 0, len(groups))
	for _, fields := range groups {
		var s GroupState
		s.Name, _ = fields["name"].(string)
		s.Consumers, _ = fields["consumers"].(int64)
		s.Pending, _ = fields["pending"].(int64)
		s.LastDeliveredID, _ = fields["last-delivered-id"].(string)
		s.EntriesRead, s.EntriesReadOK = fields["entries-read"].(int64)
		s.Lag, s.LagOK = fields["lag"].(int64)
		out = append(out, s)
	}
	return out, nil
}

// PendingSummary is the summary form of XPENDING for one partition.
type PendingSummary struct {
	Count    int64
	OldestID string // "" when nothing is pending (or the group is missing)
}

// PendingSummaries reads XPENDING KEY GROUP (the summary form, without a
// range) on each key, in one pipelined round trip. A missing stream or
// group counts as nothing pending.
func PendingSummaries(ctx context.Context, c redis.UniversalClient, keys []string, group string) ([]PendingSummary, error) {
	pipe := c.Pipeline()
	cmds := make([]*redis.XPendingCmd, len(keys))
	for i, k := range keys {
		cmds[i] = pipe.XPending(ctx, k, group)
	}
	_, _ = pipe.Exec(ctx) // errors are read per command
	out := make([]PendingSummary, len(keys))
	for i, cmd := range cmds {
		p, err := cmd.Result()
		if IsNoGroup(err) || IsNoKey(err) || errors.Is(err, redis.Nil) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("XPENDING %s %s: %w", keys[i], group, err)
		}
		out[i] = PendingSummary{Count: p.Count, OldestID: p.Lower}
	}
	return out, nil
}

// Values reads each key with GET in one pipelined round trip (not MGET: on
// Redis Cluster the keys, partition locks, live in different slots); "" for
// a missing key.
func Values(ctx context.Context, c redis.UniversalClient, keys []string) ([]string, error) {
	pipe := c.Pipeline()
	cmds := make([]*redis.StringCmd, len(keys))
	for i, k := range keys {
		cmds[i] = pipe.Get(ctx, k)
	}
	_, _ = pipe.Exec(ctx) // errors are read per command
	out := make([]string, len(keys))
	for i, cmd := range cmds {
		v, err := cmd.Result()
		if errors.Is(err, redis.Nil) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("GET %s: %w", keys[i], err)
		}
		out[i] = v
	}
	return out, nil
}

// GroupSnapshot is a processor's group state: its members with their
// heartbeat deadlines, its stored assignment and its stop reports.
type GroupSnapshot struct {
	Members    map[string]time.Time // executor ID -> heartbeat deadline (server time)
	Assignment []byte               // JSON; nil when none is stored
	Reports    map[int][]byte       // partition -> stop report (JSON)
}

// Snapshot reads the group state in one pipelined round trip (ZRANGE
// members 0 -1 WITHSCORES, GET assignment, HGETALL quarantine; the keys
// share a slot).
func (g Group) Snapshot(ctx context.Context) (GroupSnapshot, error) {
	pipe := g.c.Pipeline()
	members := pipe.ZRangeWithScores(ctx, g.MembersKey(), 0, -1)
	assignment := pipe.Get(ctx, g.AssignmentKey())
	reports := pipe.HGetAll(ctx, g.k.Quarantine(g.stream, g.processor))
	_, _ = pipe.Exec(ctx)
	var s GroupSnapshot
	ms, err := members.Result()
	if err != nil {
		return s, fmt.Errorf("ZRANGE %s: %w", g.MembersKey(), err)
	}
	s.Members = make(map[string]time.Time, len(ms))
	for _, m := range ms {
		id, _ := m.Member.(string)
		s.Members[id] = time.UnixMilli(int64(m.Score))
	}
	s.Assignment, err = assignment.Bytes()
	if errors.Is(err, redis.Nil) {
		s.Assignment, err = nil, nil
	}
	if err != nil {
		return s, fmt.Errorf("GET %s: %w", g.AssignmentKey(), err)
	}
	rs, err := reports.Result()
	if err != nil {
		return s, fmt.Errorf("HGETALL quarantine: %w", err)
	}
	s.Reports = make(map[int][]byte, len(rs))
	for f, v := range rs {
		if p, err := strconv.Atoi(f); err == nil {
			s.Reports[p] = []byte(v)
		}
	}
	return s, nil
}

// AppSnapshot is the app-wide state: registries and leadership.
type AppSnapshot struct {
	Streams    map[string]string // stream -> definition (JSON)
	Processors map[string]string // "stream/processor" -> definition (JSON)
	Queues     map[string]string // task queue -> definition (JSON)
	Leader     string            // leader lease value, "" when none
	Term       int64             // last leader term, 0 when none
	Now        time.Time         // server time
}

// App reads the app-wide state of k in one pipelined round trip (HGETALL
// of the registries of streams, processors and task queues, GET of the leader lease and term; the keys share a
// slot) and the server time (TIME).
func App(ctx context.Context, c redis.UniversalClient, k KeySpace) (AppSnapshot, error) {
	var s AppSnapshot
	now, err := ServerTime(ctx, c)
	if err != nil {
		return s, fmt.Errorf("TIME: %w", err)
	}
	s.Now = now
	pipe := c.Pipeline()
	streams := pipe.HGetAll(ctx, k.Registry())
	procs := pipe.HGetAll(ctx, k.Processors())
	queues := pipe.HGetAll(ctx, k.TaskQueues())
	leader := pipe.Get(ctx, k.Leader())
	term := pipe.Get(ctx, k.LeaderTerm())
	_, _ = pipe.Exec(ctx)
	if s.Streams, err = streams.Result(); err != nil {
		return s, fmt.Errorf("HGETALL %s: %w", k.Registry(), err)
	}
	if s.Processors, err = procs.Result(); err != nil {
		return s, fmt.Errorf("HGETALL %s: %w", k.Processors(), err)
	}
	if s.Queues, err = queues.Result(); err != nil {
		return s, fmt.Errorf("HGETALL %s: %w", k.TaskQueues(), err)
	}
	if s.Leader, err = leader.Result(); err != nil && !errors.Is(err, redis.Nil) {
		return s, fmt.Errorf("GET %s: %w", k.Leader(), err)
	}
	if s.Term, err = term.Int64(); err != nil && !errors.Is(err, redis.Nil) {
		return s, fmt.Errorf("GET %s: %w", k.LeaderTerm(), err)
	}
	return s, nil
}

// groupFields parses a raw XINFO GROUPS reply, RESP2 (arrays of field,
// value pairs) or RESP3 (maps), into one field map per group; nil gives
// none.
func groupFields(v any) ([]map[string]any, error) {
	if v == nil {
		return nil, nil
	}
	list, ok := v.([]any)
	if !ok {
		return nil, fmt.Errorf("malformed XINFO GROUPS reply %T", v)
	}
	out := make([]map[string]any, 0, len(list))
	for _, g := range list {
		fields := map[string]any{}
		switch g := g.(type) {
		case map[any]any:
			for k, v := range g {
				if k, ok := k.(string); ok {
					fields[k] = v
				}
			}
		case map[string]any:
			fields = g
		case []any:
			for i := 0; i+1 < len(g); i += 2 {
				if k, ok := g[i].(string); ok {
					fields[k] = g[i+1]
				}
			}
		default:
			return nil, fmt.Errorf("malformed XINFO GROUPS entry %T", g)
		}
		out = append(out, fields)
	}
	return out, nil
}
