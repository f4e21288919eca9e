// Touch: a worker's periodic claim of the entries it runs, which keeps
// them from being reclaimed, and its read of their cancellation flags.

package rdb

import (
	"context"
	"errors"

	"github.com/redis/go-redis/v9"
)

// A Claim is the entries of one ready stream a worker runs.
type Claim struct {
	Stream  string
	Entries []string
}

// Touch claims the entries of claims again for consumer (XCLAIM JUSTID,
// min idle 0), and reads the cancellation flag (field c) of the task
// hashes, all on one pipeline. It returns which tasks are flagged for
// cancellation (read even when the pipeline failed in part) and the
// pipeline's error, but for a missing field.
func Touch(ctx context.Context, c redis.Cmdable, consumer string, claims []Claim, tasks []string) ([]bool, error) {
	pipe := c.Pipeline()
	for _, cl := range claims {
		pipe.XClaimJustID(ctx, &redis.XClaimArgs{
			Stream: cl.Stream, Group: TaskGroup, Consumer: consumer, MinIdle: 0, Messages: cl.Entries,
		})
	}
	flags := make([]*redis.StringCmd, len(tasks))
	for i, t := range tasks {
		flags[i] = pipe.HGet(ctx, t, "c")
	}
	_, err := pipe.Exec(ctx)
	if errors.Is(err, redis.Nil) {
		err = nil
	}
	out := make([]bool, len(tasks))
	for i, f := range flags {
		out[i] = f.Val() == "1"
	}
	return out, err
}
