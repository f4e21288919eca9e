package rdb

import (
	"context"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// BackgroundRecord reads what Redis holds about a leader-only background
// task at key (HMGET): the last tick run, in Unix microseconds, and the
// term that completed a task run once; 0 for what is not recorded.
func BackgroundRecord(ctx context.Context, c redis.UniversalClient, key string) (tickMicros, doneTerm int64, err error) {
	v, err := c.HMGet(ctx, key, RecordTick, RecordDone).Result()
	if err != nil {
		return 0, 0, err
	}
	if s, ok := v[0].(string); ok {
		tickMicros, _ = strconv.ParseInt(s, 10, 64)
	}
	if s, ok := v[1].(string); ok {
		doneTerm, _ = strconv.ParseInt(s, 10, 64)
	}
	return tickMicros, doneTerm, nil
}

// KeepBackgroundRecord sets the TTL of the record at key (PEXPIRE).
func KeepBackgroundRecord(ctx context.Context, c redis.UniversalClient, key string, ttl time.Duration) error {
	return c.PExpire(ctx, key, ttl).Err()
}
