// Status: the reads of a task's hash and a queue's counts behind Info and
// Counts, and the queue's config fields a running worker polls.

package rdb

import (
	"context"
	"strings"

	"github.com/redis/go-redis/v9"
)

// TaskHash returns the whole hash task of a task (HGETALL), empty when the
// task does not exist.
func TaskHash(ctx context.Context, c redis.Cmdable, task string) (map[string]string, error) {
	return c.HGetAll(ctx, task).Result()
}

// ReadCounts returns a queue's counts hash counts (HGETALL): tasks per
// state.
func ReadCounts(ctx context.Context, c redis.Cmdable, counts string) (map[string]string, error) {
	return c.HGetAll(ctx, counts).Result()
}

// LiveLimits returns ConcurrencyField and RateField of the config hash
// config in that order (HMGET), each a string or nil when absent.
func LiveLimits(ctx context.Context, c redis.Cmdable, config string) ([]any, error) {
	return c.HMGet(ctx, config, ConcurrencyField, RateField, GlobalField).Result()
}

// CreateGroup creates the stream stream, if missing, and its consumer
// group Group; a group that exists already is not an error.
func CreateGroup(ctx context.Context, c redis.Cmdable, stream string) error {
	err := c.XGroupCreateMkStream(ctx, stream, TaskGroup, "0").Err()
	if err != nil && !strings.HasPrefix(err.Error(), "BUSYGROUP") {
		return err
	}
	return nil
}
