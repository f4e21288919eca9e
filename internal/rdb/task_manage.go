// Management by task ID: cancel.lua, requeue.lua and delete.lua, behind
// the queue's Cancel, Requeue and Delete (and the removal of the oldest
// dead tasks).

package rdb

import (
	"context"
	"errors"
	"strconv"

	"github.com/redis/go-redis/v9"
)

// Cancel drops a pending or scheduled task or flags an active one
// (cancel.lua). It returns the state before and the action: "cancelled",
// "signal" (publish the ID to the queue's cancel channel), "final" or
// "missing".
//
// KEYS: Keys, then the task's hash. ARGV: task ID.
func Cancel(ctx context.Context, c redis.Scripter, k []string, id string) (state, action string, err error) {
	v, err := cancel.Run(ctx, c, taskKeys(k, k[0]+id), id).StringSlice()
	if err != nil {
		return "", "", err
	}
	return v[0], v[1], nil
}

// CancelNode is Cancel for the task of a flow node, on behalf of
// generation gen of its flow: a task revived by a later generation (its
// field 'fg' greater) is left alone (action "stale").
//
// KEYS: Keys, then the task's hash. ARGV: task ID, generation.
func CancelNode(ctx context.Context, c redis.Scripter, k []string, id string, gen int64) (state, action string, err error) {
	v, err := cancel.Run(ctx, c, taskKeys(k, k[0]+id), id, gen).StringSlice()
	if err != nil {
		return "", "", err
	}
	return v[0], v[1], nil
}

// Requeue makes a dead or failed task ready again (requeue.lua) and returns
// its state before ("" when missing).
//
// KEYS: Keys, then the task's hash. ARGV: task ID.
func Requeue(ctx context.Context, c redis.Scripter, k []string, id string) (string, error) {
	v, err := requeue.Run(ctx, c, taskKeys(k, k[0]+id), id).Text()
	if errors.Is(err, redis.Nil) {
		return "", nil
	}
	return v, err
}

// Delete removes task id now if it has ended (succeeded, failed,
// cancelled or dead) and returns the state it was in ("" when missing):
// its hash, its place in the retention index or the dead set, a webhook
// delivery still due, its updates and its log (delete.lua). A task that has
// not ended is left alone.
//
// KEYS: Keys, updates prefix, logs prefix, then the task's hash, updates
// and log. ARGV: "id", task ID.
func Delete(ctx context.Context, c redis.Scripter, k []string, updates, logs, id string) (string, error) {
	return remove.Run(ctx, c, taskKeys(k, updates, logs, k[0]+id, updates+id, logs+id), "id", id).Text()
}

// DeleteDead removes up to limit of the oldest dead tasks as Delete does
// and returns how many, and whether more may be left.
//
// KEYS: Keys, updates prefix, logs prefix. ARGV: "dead", limit.
func DeleteDead(ctx context.Context, c redis.Scripter, k []string, updates, logs string, limit int) (deleted int, more bool, err error) {
	v, err := remove.Run(ctx, c, taskKeys(k, updates, logs), "dead", limit).Int64Slice()
	if err != nil {
		return 0, false, err
	}
	return int(v[0]), int(v[1]) >= limit, nil
}

// SignalCancel publishes task id on the queue's cancel channel channel
// (KeySpace.TaskCancel), for the worker running it (Cancel's "signal").
func SignalCancel(ctx context.Context, c redis.Cmdable, channel, id string) error {
	return c.Publish(ctx, channel, id).Err()
}

// LastDeath returns the score of the latest task to die in the dead set
// dead, as text, and false when the set is empty.
func LastDeath(ctx context.Context, c redis.Cmdable, dead string) (string, bool, error) {
	last, err := c.ZRangeWithScores(ctx, dead, -1, -1).Result()
	if err != nil || len(last) == 0 {
		return "", false, err
	}
	return strconv.FormatFloat(last[0].Score, 'f', -1, 64), true, nil
}

// DeadUpTo returns up to n IDs of the dead set dead, from offset, of the
// tasks that died up to upTo (a score of LastDeath), oldest first.
func DeadUpTo(ctx context.Context, c redis.Cmdable, dead, upTo string, offset, n int64) ([]string, error) {
	return c.ZRangeByScore(ctx, dead, &redis.ZRangeBy{Min: "-inf", Max: upTo, Offset: offset, Count: n}).Result()
}
