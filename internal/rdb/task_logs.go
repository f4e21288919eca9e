// Task logs: the lines a running task records (Task.Log), in a stream per
// task (KeySpace.TaskLogsPrefix).

package rdb

import (
	"context"
	_ "embed"
	"time"

	"github.com/redis/go-redis/v9"
)

var (
	//go:embed task_log.lua
	logSrc    string
	logScript = redis.NewScript(Describe("task log", logSrc))
)

// AppendLog appends lines to the log stream of the task whose hash is
// task (log.lua), keeping at most cap lines; the log expires after ttl, or
// the task's own timeout plus retention when its hash has them. A task
// that does not exist gets no log.
func AppendLog(ctx context.Context, c redis.Scripter, task, log string, cap int, ttl time.Duration, attempt int, lines []string) error {
	args := make([]any, 0, 3+len(lines))
	args = append(args, cap, ttl.Milliseconds(), attempt)
	for _, line := range lines {
		args = append(args, line)
	}
	return logScript.Run(ctx, c, []string{task, log}, args...).Err()
}

// ReadLog returns the whole log stream log, oldest line first (XRANGE).
func ReadLog(ctx context.Context, c redis.Cmdable, log string) ([]redis.XMessage, error) {
	return c.XRange(ctx, log, "-", "+").Result()
}
