// Cron: cron.lua records the ticks of periodic schedules enqueued by the
// scheduler's leader, so that a tick is enqueued once across leaders.

package rdb

import (
	"context"
	_ "embed"
	"time"

	"github.com/redis/go-redis/v9"
)

var (
	//go:embed task_cron.lua
	cronSrc  string
	cronTick = redis.NewScript(Describe("task_cron.lua", cronSrc))
)

// CronTick records that tick of schedule name was enqueued by the leader of
// term (cron.lua): the schedule's count of ticks when recorded (1 or more),
// 0 recorded before, -1 a later term recorded one (stop).
//
// KEYS: cron hash. ARGV: name, tick ms, term.
func CronTick(ctx context.Context, c redis.Scripter, cronKey, name string, tick time.Time, term int64) (int, error) {
	v, err := cronTick.Run(ctx, c, []string{cronKey}, name, tick.UnixMilli(), term).Int()
	return v, err
}

// CronTicks returns the cron hash cronKey: the last tick recorded per
// schedule name ("TICK_MS:TERM:COUNT", see cron.lua).
func CronTicks(ctx context.Context, c redis.Cmdable, cronKey string) (map[string]string, error) {
	return c.HGetAll(ctx, cronKey).Result()
}
