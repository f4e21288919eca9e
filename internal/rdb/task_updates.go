// Task updates: the progress reports and partial results of a running task
// (Task.Progress, Task.Partial), in a stream per task
// (KeySpace.TaskUpdatesPrefix) that Follow reads.

package rdb

import (
	"context"
	_ "embed"
	"errors"
	"time"

	"github.com/redis/go-redis/v9"
)

var (
	//go:embed task_update.lua
	updateSrc    string
	updateScript = redis.NewScript(Describe("task update", updateSrc))
)

// AppendUpdate records an update of kind with data in the updates stream
// of the task whose hash is task, when it is active (update.lua), keeping
// about cap updates that expire after ttl.
func AppendUpdate(ctx context.Context, c redis.Scripter, task, updates, kind, data string, cap int, ttl time.Duration, attempt int) error {
	return updateScript.Run(ctx, c, []string{task, updates}, kind, data, cap, ttl.Milliseconds(), attempt).Err()
}

// ReadUpdates reads up to n updates of stream after last, waiting up to
// block for one (XREAD; block < 0: not at all); none is not an error.
func ReadUpdates(ctx context.Context, c redis.Cmdable, stream, last string, n int64, block time.Duration) ([]redis.XStream, error) {
	res, err := c.XRead(ctx, &redis.XReadArgs{Streams: []string{stream, last}, Count: n, Block: block}).Result()
	if errors.Is(err, redis.Nil) {
		return nil, nil
	}
	return res, err
}

// TaskState returns the state field ('s') of the task whose hash is task,
// redis.Nil when the task does not exist.
func TaskState(ctx context.Context, c redis.Cmdable, task string) (string, error) {
	return c.HGet(ctx, task, "s").Result()
}
