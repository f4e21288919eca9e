package rdb

import (
	"context"
	"fmt"

	"github.com/redis/go-redis/v9"
)

// MoveGroup moves the group to start on keys (creating it, and the stream,
// where missing) in one pipeline, with its entries-read counter set to the
// entries before start, so the workers' trim check never takes the entries
// skipped for entries lost (see set_group.lua).
func MoveGroup(ctx context.Context, client redis.UniversalClient, keys []string, group, start string) error {
	run := func() ([]*redis.Cmd, error) {
		pipe := client.Pipeline()
		cmds := make([]*redis.Cmd, len(keys))
		for i, k := range keys {
			cmds[i] = SetGroup(ctx, pipe, k, group, start, true)
		}
		_, err := pipe.Exec(ctx) // errors are read per command
		return cmds, err
	}
	if err := Load(ctx, client); err != nil {
		return fmt.Errorf("load scripts: %w", err)
	}
	cmds, err := run()
	if IsNoScript(err) { // the server restarted meanwhile
		if err := Load(ctx, client); err != nil {
			return fmt.Errorf("load scripts: %w", err)
		}
		cmds, _ = run()
	}
	for i, cmd := range cmds {
		if err := cmd.Err(); err != nil {
			return fmt.Errorf("XGROUP SETID %s %s %s: %w", keys[i], group, start, err)
		}
	}
	return nil
}

// DropPending acknowledges every pending entry of the group on keys, a page
// of XPENDING per partition and round trip, and returns the counts.
func DropPending(ctx context.Context, client redis.UniversalClient, keys []string, group string, page int64) ([]int64, error) {
	counts := make([]int64, len(keys))
	active := make([]int, len(keys)) // indexes of keys that may have more
	for i := range active {
		active[i] = i
	}
	for len(active) > 0 {
		pipe := client.Pipeline()
		pending := make([]*redis.XPendingExtCmd, len(active))
		for j, i := range active {
			pending[j] = pipe.XPendingExt(ctx, &redis.XPendingExtArgs{Stream: keys[i], Group: group, Start: "-", End: "+", Count: page})
		}
		if _, err := pipe.Exec(ctx); err != nil {
			return nil, fmt.Errorf("XPENDING: %w", err)
		}
		ack := client.Pipeline()
		var next []int
		for j, i := range active {
			ps := pending[j].Val()
			if len(ps) == 0 {
				continue
			}
			ids := make([]string, len(ps))
			for k, p := range ps {
				ids[k] = p.ID
			}
			ack.XAck(ctx, keys[i], group, ids...)
			counts[i] += int64(len(ids))
			if int64(len(ps)) == page {
				next = append(next, i)
			}
		}
		if ack.Len() > 0 {
			if _, err := ack.Exec(ctx); err != nil {
				return nil, fmt.Errorf("XACK: %w", err)
			}
		}
		active = next
	}
	return counts, nil
}

// Positions returns the group's last delivered ID on each of keys.
func Positions(ctx context.Context, client redis.UniversalClient, keys []string, group string) ([]string, error) {
	pipe := client.Pipeline()
	cmds := make([]*redis.XInfoGroupsCmd, len(keys))
	for i, k := range keys {
		cmds[i] = pipe.XInfoGroups(ctx, k)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return nil, fmt.Errorf("XINFO GROUPS: %w", err)
	}
	out := make([]string, len(keys))
	for i, cmd := range cmds {
		out[i] = "?"
		for _, g := range cmd.Val() {
			if g.Name == group {
				out[i] = g.LastDeliveredID
			}
		}
	}
	return out, nil
}

// DeleteKeys deletes keys, one DEL each in one pipeline (the keys may be in
// different hash slots), and returns how many existed.
func DeleteKeys(ctx context.Context, client redis.UniversalClient, keys []string) (int64, error) {
	pipe := client.Pipeline()
	dels := make([]*redis.IntCmd, len(keys))
	for i, k := range keys {
		dels[i] = pipe.Del(ctx, k)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return 0, fmt.Errorf("DEL: %w", err)
	}
	var n int64
	for _, d := range dels {
		n += d.Val()
	}
	return n, nil
}
