// Webhook deliveries: a queue's set of the deliveries to attempt
// (KeySpace.TaskWebhooks), and their state in the fields of each task's
// hash (whs: state, wha: attempts, whe: last error, whd: delivery time,
// whk: the task's own secret).

package rdb

import (
	"context"
	_ "embed"
	"errors"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// States of a webhook delivery (field whs; common.lua sets HookPending when
// the task ends).
const (
	HookPending   = "pending"
	HookDelivered = "delivered"
	HookFailed    = "failed"
)

var (
	//go:embed task_hookclaim.lua
	hookClaimSrc    string
	hookClaimScript = redis.NewScript(Describe("webhook claim", hookClaimSrc))
)

// ClaimHooks takes up to n deliveries due at now from the webhook set set,
// each for lease (hookclaim.lua), and returns their task IDs and when the
// earliest delivery left is due (ok false: none, or unreadable).
func ClaimHooks(ctx context.Context, c redis.Scripter, set string, now time.Time, lease time.Duration, n int) (ids []string, next time.Time, ok bool, err error) {
	v, err := hookClaimScript.Run(ctx, c, []string{set}, now.UnixMilli(), lease.Milliseconds(), n).Slice()
	if err != nil {
		return nil, time.Time{}, false, err
	}
	taken, _ := v[0].([]any)
	ids = make([]string, 0, len(taken))
	for _, id := range taken {
		id, _ := id.(string)
		ids = append(ids, id)
	}
	if s, _ := v[1].(string); s != "" {
		if due, err := strconv.ParseFloat(s, 64); err == nil {
			next, ok = time.UnixMilli(int64(due)), true
		}
	}
	return ids, next, ok, nil
}

// DropHook removes task id from the webhook set set (ZREM), ignoring
// errors: a delivery with nothing to send.
func DropHook(ctx context.Context, c redis.Cmdable, set, id string) { c.ZRem(ctx, set, id) }

// HookSecret returns the webhook secret of the task whose hash is task
// (field whk), "" when it has none.
func HookSecret(ctx context.Context, c redis.Cmdable, task string) (string, error) {
	s, err := c.HGet(ctx, task, "whk").Result()
	if errors.Is(err, redis.Nil) {
		return s, nil
	}
	return s, err
}

// RecordHookDelivered records in one transaction that the delivery of task id
// (hash task) succeeded at attempt attempts, at at, and drops it from set.
func RecordHookDelivered(ctx context.Context, c redis.Cmdable, task, set, id string, attempts int, at time.Time) error {
	pipe := c.TxPipeline()
	pipe.HSet(ctx, task, "whs", HookDelivered, "wha", attempts, "whd", at.UnixMilli())
	pipe.HDel(ctx, task, "whe")
	pipe.ZRem(ctx, set, id)
	_, err := pipe.Exec(ctx)
	return err
}

// RecordHookFailed records in one transaction that the delivery of task id
// (hash task) failed for good at attempt attempts with error msg, and
// drops it from set.
func RecordHookFailed(ctx context.Context, c redis.Cmdable, task, set, id string, attempts int, msg string) error {
	pipe := c.TxPipeline()
	pipe.HSet(ctx, task, "whs", HookFailed, "wha", attempts, "whe", msg)
	pipe.ZRem(ctx, set, id)
	_, err := pipe.Exec(ctx)
	return err
}

// RecordHookRetry records in one transaction that attempt attempts of the
// delivery of task id (hash task) failed with error msg, and schedules the
// next in set at due.
func RecordHookRetry(ctx context.Context, c redis.Cmdable, task, set, id string, attempts int, msg string, due time.Time) error {
	pipe := c.TxPipeline()
	pipe.HSet(ctx, task, "wha", attempts, "whe", msg)
	// Rounded up: the next attempt never comes before the due time.
	pipe.ZAdd(ctx, set, redis.Z{Score: float64(due.Add(time.Millisecond - 1).UnixMilli()), Member: id})
	_, err := pipe.Exec(ctx)
	return err
}
