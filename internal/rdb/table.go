package rdb

import (
	"context"
	"errors"

	"github.com/redis/go-redis/v9"
)

// A table's values live in one hash per partition (KeySpace.Table); the
// writes go with the acknowledgements, in CommitTables.

// TableGet returns the value of key in the table hash hash (HGET), and
// whether it has one.
func TableGet(ctx context.Context, c redis.UniversalClient, hash, key string) ([]byte, bool, error) {
	v, err := c.HGet(ctx, hash, key).Bytes()
	if errors.Is(err, redis.Nil) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	return v, true, nil
}

// TableGets returns the values of keys[i] in the table hash hashes[i], one
// HGET each in one pipelined round trip; ok[i] reports whether keys[i] has
// one.
func TableGets(ctx context.Context, c redis.UniversalClient, hashes, keys []string) (values [][]byte, ok []bool, err error) {
	pipe := c.Pipeline()
	cmds := make([]*redis.StringCmd, len(keys))
	for j, k := range keys {
		cmds[j] = pipe.HGet(ctx, hashes[j], k)
	}
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return nil, nil, err
	}
	values, ok = make([][]byte, len(keys)), make([]bool, len(keys))
	for j, cmd := range cmds {
		data, err := cmd.Bytes()
		if errors.Is(err, redis.Nil) {
			continue
		}
		if err != nil {
			return nil, nil, err
		}
		values[j], ok[j] = data, true
	}
	return values, ok, nil
}

// TableScan returns a page of the table hash hash from cursor (HSCAN with
// COUNT count): its keys and values, alternating, and the cursor of the
// next page (0 after the last).
func TableScan(ctx context.Context, c redis.UniversalClient, hash string, cursor uint64, count int64) (kv []string, next uint64, err error) {
	return c.HScan(ctx, hash, cursor, "", count).Result()
}
