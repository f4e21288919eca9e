package rdb

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/leatdev/leat/internal/scripts"
	"github.com/redis/go-redis/v9"
)

// Ack acknowledges ids of group, per partition key, in one pipelined round
// trip (XACK). On failure it returns the keys whose acks were lost to a
// connection problem and may be sent again; a reply error (a malformed ID)
// would fail again, and is not among them.
func Ack(ctx context.Context, c redis.UniversalClient, group string, ids map[string][]string) (retry []string, err error) {
	pipe := c.Pipeline()
	cmds := make(map[string]*redis.IntCmd, len(ids))
	for key, list := range ids {
		cmds[key] = pipe.XAck(ctx, key, group, list...)
	}
	if _, err = pipe.Exec(ctx); err == nil {
		return nil, nil
	}
	for key, cmd := range cmds {
		var reply redis.Error
		if cmd.Err() != nil && !errors.As(cmd.Err(), &reply) {
			retry = append(retry, key)
		}
	}
	return retry, err
}

// Counters are what Redis counts about a partition stream and its groups,
// for the trim check.
type Counters struct {
	Added   int64  // entries-added
	Length  int64  // current length
	FirstID string // ID of the first entry kept
	Groups  []scripts.GroupInfo
}

// PartitionCounters reads the counters of each key (XINFO STREAM and a raw
// XINFO GROUPS, whose unknown entries-read counter go-redis would read as 0)
// in one pipelined round trip.
func PartitionCounters(ctx context.Context, c redis.UniversalClient, keys []string) ([]Counters, error) {
	pipe := c.Pipeline()
	infos := make([]*redis.XInfoStreamCmd, len(keys))
	groups := make([]*redis.Cmd, len(keys))
	for i, k := range keys {
		infos[i] = pipe.XInfoStream(ctx, k)
		groups[i] = pipe.Do(ctx, "XINFO", "GROUPS", k)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return nil, err
	}
	out := make([]Counters, len(keys))
	for i := range keys {
		info := infos[i].Val()
		gs, err := scripts.ParseGroups(groups[i].Val())
		if err != nil {
			return nil, fmt.Errorf("%s: %w", keys[i], err)
		}
		out[i] = Counters{Added: info.EntriesAdded, Length: info.Length, FirstID: info.FirstEntry.ID, Groups: gs}
	}
	return out, nil
}

// Consumers lists the consumers of group on each key (XINFO CONSUMERS, one
// pipelined round trip); errs[i] is the error for keys[i] (a missing group
// or stream among them).
func Consumers(ctx context.Context, c redis.UniversalClient, keys []string, group string) (consumers [][]redis.XInfoConsumer, errs []error) {
	pipe := c.Pipeline()
	cmds := make([]*redis.XInfoConsumersCmd, len(keys))
	for i, k := range keys {
		cmds[i] = pipe.XInfoConsumers(ctx, k, group)
	}
	_, _ = pipe.Exec(ctx) // errors are read per command
	consumers, errs = make([][]redis.XInfoConsumer, len(keys)), make([]error, len(keys))
	for i, cmd := range cmds {
		consumers[i], errs[i] = cmd.Result()
	}
	return consumers, errs
}

// DeleteConsumers deletes, on each key of dead, the consumers of group
// named there that have nothing pending, atomically per key (see
// delete_consumers.lua), in one pipelined round trip, and returns how many
// it deleted.
func DeleteConsumers(ctx context.Context, c redis.UniversalClient, group string, dead map[string][]string) (int, error) {
	if len(dead) == 0 {
		return 0, nil
	}
	if err := scripts.Load(ctx, c); err != nil {
		return 0, err
	}
	pipe := c.Pipeline()
	cmds := make([]*redis.Cmd, 0, len(dead))
	for key, names := range dead {
		cmds = append(cmds, scripts.DeleteConsumers(ctx, pipe, key, group, names...))
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return 0, err
	}
	deleted := 0
	for _, cmd := range cmds {
		n, _ := cmd.Int()
		deleted += n
	}
	return deleted, nil
}

// IsNoGroup reports whether err says a consumer group is missing.
func IsNoGroup(err error) bool { return err != nil && strings.Contains(err.Error(), "NOGROUP") }

// IsNoKey reports whether err says a stream is missing.
func IsNoKey(err error) bool { return err != nil && err.Error() == "ERR no such key" }
