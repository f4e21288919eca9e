package rdb

import (
	"context"

	"github.com/redis/go-redis/v9"
)

// The reads of package leattest, the public tester, which checks what a
// test's app left in Redis.

// ReadStream returns every entry of the stream key (XRANGE - +).
func ReadStream(ctx context.Context, c redis.Cmdable, key string) ([]redis.XMessage, error) {
	return c.XRange(ctx, key, "-", "+").Result()
}

// LastEntry returns the last entry of the stream key, none when it is
// empty or missing (XREVRANGE + - COUNT 1).
func LastEntry(ctx context.Context, c redis.Cmdable, key string) ([]redis.XMessage, error) {
	return c.XRevRangeN(ctx, key, "+", "-", 1).Result()
}

// StreamGroups returns the consumer groups of the stream key (XINFO
// GROUPS); an error saying "no such key" when it is missing.
func StreamGroups(ctx context.Context, c redis.Cmdable, key string) ([]redis.XInfoGroup, error) {
	return c.XInfoGroups(ctx, key).Result()
}
