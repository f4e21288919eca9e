// Reads: the blocking commands of a worker's fetchers, on a connection of
// their own that other goroutines may interrupt (CLIENT UNBLOCK).

package rdb

import (
	"context"
	"time"

	"github.com/redis/go-redis/v9"
)

// ReadNew reads up to n new entries of streams for consumer of Group,
// waiting up to block (XREADGROUP ... STREAMS streams... > ...); redis.Nil
// when none came.
func ReadNew(ctx context.Context, c redis.StreamCmdable, consumer string, streams []string, n int64, block time.Duration) ([]redis.XStream, error) {
	args := &redis.XReadGroupArgs{Group: TaskGroup, Consumer: consumer, Streams: readArgs(streams), Count: n, Block: block}
	return c.XReadGroup(ctx, args).Result()
}

// readArgs returns XREADGROUP's STREAMS arguments for new entries of streams.
func readArgs(streams []string) []string {
	out := append(make([]string, 0, 2*len(streams)), streams...)
	for range streams {
		out = append(out, ">")
	}
	return out
}

// PopWake waits up to timeout for a push to one of the wake lists (BLPOP)
// and returns the list and the value popped; redis.Nil when none came.
func PopWake(ctx context.Context, c redis.ListCmdable, timeout time.Duration, lists ...string) ([]string, error) {
	return c.BLPop(ctx, timeout, lists...).Result()
}
