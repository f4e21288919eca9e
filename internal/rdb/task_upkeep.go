// Upkeep: the scripts a queue's background loops run, promote.lua (due
// tasks to the ready streams), reclaim.lua (tasks idle past their
// visibility timeout back to ready, or dead) and janitor.lua (finished
// and dead tasks past retention removed).

package rdb

import (
	"context"
	"time"

	"github.com/redis/go-redis/v9"
)

// Promote moves at most limit due tasks to the ready streams (promote.lua)
// and returns how many, the next due time (zero when none) and the server's
// time.
//
// KEYS: Keys. ARGV: limit.
func Promote(ctx context.Context, c redis.Scripter, k []string, limit int) (moved int, next, now time.Time, err error) {
	v, err := promote.Run(ctx, c, k, limit).Int64Slice()
	if err != nil {
		return 0, next, now, err
	}
	if v[1] >= 0 {
		next = time.UnixMilli(v[1])
	}
	return int(v[0]), next, time.UnixMilli(v[2]), nil
}

// Reclaim makes ready again the tasks of level whose entries were idle for
// at least minIdle (reclaim.lua), from cursor on. It returns the next cursor
// ("0-0" when the pass is complete), how many were reclaimed and how many
// became dead.
//
// KEYS: Keys. ARGV: consumer, min idle ms, count, level, cursor, dead max,
// dead age ms.
func Reclaim(ctx context.Context, c redis.Scripter, k []string, consumer string, minIdle time.Duration, count, level int, cursor string, deadMax int, deadAge time.Duration) (next string, reclaimed, buried int, err error) {
	v, err := reclaim.Run(ctx, c, k, consumer, minIdle.Milliseconds(), count, level, cursor, deadMax, deadAge.Milliseconds()).Slice()
	if err != nil {
		return "", 0, 0, err
	}
	return toString(v[0]), int(toInt(v[1])), int(toInt(v[2])), nil
}

// Janitor removes at most limit finished tasks whose retention ended and
// as many dead tasks older than deadAge (janitor.lua). It returns how many
// of each and the next end of retention (zero when none).
//
// KEYS: Keys. ARGV: limit, dead age ms.
func Janitor(ctx context.Context, c redis.Scripter, k []string, limit int, deadAge time.Duration) (done, dead int, next time.Time, err error) {
	v, err := janitor.Run(ctx, c, k, limit, deadAge.Milliseconds()).Int64Slice()
	if err != nil {
		return 0, 0, next, err
	}
	if v[2] >= 0 {
		next = time.UnixMilli(v[2])
	}
	return int(v[0]), int(v[1]), next, nil
}

// WaitWake waits up to timeout for a push to the queue's wake list wake
// (BLPOP): nil when one came, redis.Nil when none did.
func WaitWake(ctx context.Context, c redis.Cmdable, wake string, timeout time.Duration) error {
	return c.BLPop(ctx, timeout, wake).Err()
}

// DeleteIdleConsumers deletes the consumers of Group on stream that have
// nothing pending and were idle for idle, but keep (XINFO CONSUMERS, then
// XGROUP DELCONSUMER for each, its error ignored). XGROUP DELCONSUMER drops
// only the consumer's pending entries, and it has none.
func DeleteIdleConsumers(ctx context.Context, c redis.Cmdable, stream, keep string, idle time.Duration) error {
	cs, err := c.XInfoConsumers(ctx, stream, TaskGroup).Result()
	if err != nil {
		return err
	}
	for _, cn := range cs {
		if cn.Pending == 0 && cn.Idle >= idle && cn.Name != keep {
			c.XGroupDelConsumer(ctx, stream, TaskGroup, cn.Name)
		}
	}
	return nil
}
