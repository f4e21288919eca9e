package rdb

import (
	"context"
	"errors"
	"strings"

	"github.com/leatdev/leat/internal/topology"
	"github.com/redis/go-redis/v9"
)

// Ack acknowledges ids of group, per partition key, in one pipelined round
// trip (XACK). On failure it returns the keys whose acks were lost to a
// connection problem or a transient error reply (topology.IsTransient: LOADING,
// READONLY, CLUSTERDOWN, ...) and may be sent again, and, in refused, the
// keys whose acks another reply error refused, with it: those would fail
// again (WRONGTYPE, NOPERM, a malformed ID). err is the failure of the
// acks to send again (nil when there are none). A group that does not
// exist is no error: XACK acknowledges nothing.
func Ack(ctx context.Context, c redis.UniversalClient, group string, ids map[string][]string) (retry []string, refused map[string]error, err error) {
	pipe := c.Pipeline()
	cmds := make(map[string]*redis.IntCmd, len(ids))
	for key, list := range ids {
		// The IDs go as pointers into list, which outlives Exec: a string
		// put in an interface is a copy of it allocated on the heap, one
		// per acknowledged entry (what XAck does).
		args := make([]any, 3, 3+len(list))
		args[0], args[1], args[2] = "XACK", key, group
		for i := range list {
			args = append(args, &list[i])
		}
		cmds[key] = redis.NewIntCmd(ctx, args...)
		_ = pipe.Process(ctx, cmds[key])
	}
	if _, err := pipe.Exec(ctx); err == nil {
		return nil, nil, nil
	}
	for key, cmd := range cmds {
		cerr := cmd.Err()
		var reply redis.Error
		switch {
		case cerr == nil:
		case !errors.As(cerr, &reply) || topology.IsTransient(cerr):
			retry, err = append(retry, key), cerr
		default:
			if refused == nil {
				refused = map[string]error{}
			}
			refused[key] = cerr
		}
	}
	return retry, refused, err
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
	if err := Load(ctx, c); err != nil {
		return 0, err
	}
	pipe := c.Pipeline()
	cmds := make([]*redis.Cmd, 0, len(dead))
	for key, names := range dead {
		cmds = append(cmds, DeleteConsumersOn(ctx, pipe, key, group, names...))
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

// countersBatch bounds the streams one group_counters script reads.
const countersBatch = 500

// GroupCounters reads the counters of each partition stream in keys and of
// group on it (QueueGroupCounters) in one round trip. On a single server
// one script call reads up to countersBatch streams, so the commands sent do
// not grow with the number of partitions; on Cluster, where partitions live
// in different hash slots, one call per stream is pipelined.
func GroupCounters(ctx context.Context, c redis.UniversalClient, keys []string, group string) ([]Counters, error) {
	batch := countersBatch
	if _, single := c.(*redis.Client); !single {
		batch = 1
	}
	run := func() ([]*redis.Cmd, error) {
		pipe := c.Pipeline()
		var cmds []*redis.Cmd
		for from := 0; from < len(keys); from += batch {
			cmds = append(cmds, QueueGroupCounters(ctx, pipe, keys[from:min(from+batch, len(keys))], group))
		}
		_, err := pipe.Exec(ctx)
		return cmds, err
	}
	cmds, err := run()
	if IsNoScript(err) {
		if err := Load(ctx, c); err != nil {
			return nil, err
		}
		cmds, err = run()
	}
	if err != nil {
		return nil, err
	}
	out := make([]Counters, 0, len(keys))
	for i, cmd := range cmds {
		n := min(batch, len(keys)-i*batch)
		cs, err := ParseGroupCounters(cmd, n)
		if err != nil {
			return nil, err
		}
		out = append(out, cs...)
	}
	return out, nil
}
