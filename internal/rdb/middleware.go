package rdb

import (
	"context"
	_ "embed"
	"time"

	"github.com/redis/go-redis/v9"
)

var (
	//go:embed mw_rate.lua
	mwRateSrc string
	mwRate    = redis.NewScript(mwRateSrc)
)

// RateReserve reserves the next slot of the GCRA rate limit kept in key
// (mw_rate.lua): one event every interval, burst at once. It returns how
// long to wait for the slot (0: at once).
//
//	KEYS: rate state; ARGV: interval µs, burst tolerance µs; returns the wait in µs.
func RateReserve(ctx context.Context, c redis.Scripter, key string, interval time.Duration, burst int) (time.Duration, error) {
	iv := interval.Microseconds()
	n, err := mwRate.Run(ctx, c, []string{key}, iv, iv*int64(max(burst, 1)-1)).Int64()
	if err != nil {
		return 0, err
	}
	return time.Duration(n) * time.Microsecond, nil
}

// DedupDone reads the dedup keys (KeySpace.Local of Dedup) in one MGET:
// nil for a key not recorded.
func DedupDone(ctx context.Context, c redis.UniversalClient, keys ...string) ([]any, error) {
	return c.MGet(ctx, keys...).Result()
}

// DedupRecord queues on pipe (a fenced write's) the recording of keys,
// each set to token, expiring after ttl (SET PX).
func DedupRecord(ctx context.Context, pipe redis.Pipeliner, keys []string, token string, ttl time.Duration) {
	for _, k := range keys {
		pipe.Set(ctx, k, token, ttl)
	}
}
