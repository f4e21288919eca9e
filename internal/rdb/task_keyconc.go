// Key concurrency of keyed queues: the field of a queue's live settings
// that every task script reads for how many tasks of a key may be in
// progress at once (task_common.lua's KN).

package rdb

import (
	"context"

	"github.com/redis/go-redis/v9"
)

// KeyConcurrencyField is the field of the queue's live settings
// (KeySpace.TaskConfig) holding its key concurrency; absent means 1.
const KeyConcurrencyField = "kn"

// SetKeyConcurrency records the key concurrency n of the queue whose live
// settings are config: HSET of KeyConcurrencyField, or HDEL when n is 1
// (one task of a key at a time, what the scripts do without the field).
func SetKeyConcurrency(ctx context.Context, c redis.Cmdable, config string, n int) error {
	if n <= 1 {
		return c.HDel(ctx, config, KeyConcurrencyField).Err()
	}
	return c.HSet(ctx, config, KeyConcurrencyField, n).Err()
}

// KeyConcurrency returns the key concurrency recorded in the live settings
// config (1 when none).
func KeyConcurrency(ctx context.Context, c redis.Cmdable, config string) (int, error) {
	n, err := c.HGet(ctx, config, KeyConcurrencyField).Int()
	if err == redis.Nil {
		return 1, nil
	}
	if err != nil {
		return 0, err
	}
	return max(n, 1), nil
}
