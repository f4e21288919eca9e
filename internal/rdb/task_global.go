// Global concurrency: at most N tasks of a queue running over all its
// workers, a live setting of the queue (GlobalField of its config hash)
// that fetch.lua applies against the queue's count of active tasks.

package rdb

import (
	"context"
	_ "embed"
	"errors"
	"strconv"

	"github.com/redis/go-redis/v9"
)

// GlobalField is the field of a queue's live settings (KeySpace.TaskConfig)
// that holds its global concurrency: a whole number of at least 1; absent
// is no limit. fetch.lua takes no more tasks than it leaves, and a fetch it
// refused sets the field "gwait", which WakeGlobalWaiters clears.
const GlobalField = "global"

// ErrGlobalFull is the error of a fetch while the queue runs as many tasks
// as its global concurrency allows (see fetch.lua): it took no task.
var ErrGlobalFull = errors.New("task queue at its global concurrency")

var (
	//go:embed task_global_wake.lua
	taskGlobalWakeSrc string
	taskGlobalWake    = redis.NewScript(taskGlobalWakeSrc)
)

// SetLiveGlobal sets the global concurrency of the queue whose config hash
// is config to n (n >= 1).
func SetLiveGlobal(ctx context.Context, c redis.Cmdable, config string, n int) error {
	return c.HSet(ctx, config, GlobalField, n).Err()
}

// ClearLiveGlobal removes the global concurrency of the queue whose config
// hash is config (and the flag of waiting fetchers, who are woken apart).
func ClearLiveGlobal(ctx context.Context, c redis.Cmdable, config string) error {
	return c.HDel(ctx, config, GlobalField, "gwait").Err()
}

// ReadLiveGlobal returns the global concurrency of the queue whose config
// hash is config, 0 when none is set.
func ReadLiveGlobal(ctx context.Context, c redis.Cmdable, config string) (int, error) {
	v, err := c.HGet(ctx, config, GlobalField).Result()
	if errors.Is(err, redis.Nil) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	n, _ := ParseLiveGlobal(v)
	return n, nil
}

// ParseLiveGlobal reads GlobalField's text: a whole number of at least 1,
// else no limit (0, false).
func ParseLiveGlobal(s string) (int, bool) {
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 {
		return 0, false
	}
	return n, true
}

// WakeGlobalWaiters publishes ResumeMessage on channel, the queue's cancel
// channel, when a fetch was refused for the queue's global concurrency
// since the last wake (task_global_wake.lua); it reports whether it did.
func WakeGlobalWaiters(ctx context.Context, c redis.Scripter, config, channel string) (bool, error) {
	n, err := taskGlobalWake.Run(ctx, c, []string{config}, channel, ResumeMessage).Int()
	return n == 1, err
}
