// Cleaning up a queue: draining what waits (task_drain.lua), deleting
// ended tasks by age (task_clean.lua) and obliterating a queue whole.

package rdb

import (
	"context"
	_ "embed"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

var (
	//go:embed task_drain.lua
	drainSrc string
	//go:embed task_clean.lua
	cleanSrc string

	drain = script("task_drain.lua", drainSrc)
	clean = script("task_clean.lua", cleanSrc)
)

// Drain deletes up to limit of the queue's waiting tasks (pending,
// scheduled, retrying) from where the last call left off (cursor; "" to
// start), and returns how many it deleted and the next cursor ("" when
// done). levels is the queue's number of priority levels.
//
// KEYS: Keys, updates prefix, logs prefix. ARGV: levels, limit, cursor.
func Drain(ctx context.Context, c redis.Scripter, k []string, updates, logs string, levels, limit int, cursor string) (int, string, error) {
	v, err := drain.Run(ctx, c, taskKeys(k, updates, logs), levels, limit, cursor).Slice()
	if err != nil {
		return 0, "", err
	}
	n, _ := v[0].(int64)
	next, _ := v[1].(string)
	return int(n), next, nil
}

// Clean deletes up to limit of the queue's tasks in state (succeeded,
// failed, cancelled or dead) that finished at or before before, walking
// from offset (0 to start), and returns how many it deleted and the next
// offset (-1 when done).
//
// KEYS: Keys, updates prefix, logs prefix. ARGV: state, before (Unix ms),
// offset, limit.
func Clean(ctx context.Context, c redis.Scripter, k []string, updates, logs, state string, before time.Time, offset, limit int) (int, int, error) {
	v, err := clean.Run(ctx, c, taskKeys(k, updates, logs), state, before.UnixMilli(), offset, limit).Int64Slice()
	if err != nil {
		return 0, 0, err
	}
	return int(v[0]), int(v[1]), nil
}

// LiveTaskWorkers returns the workers of a queue (its workers set, scored
// by last beat in server time) that beat within the last within.
func LiveTaskWorkers(ctx context.Context, c redis.Cmdable, workers string, within time.Duration) (int64, error) {
	now, err := c.Time(ctx).Result()
	if err != nil {
		return 0, err
	}
	return c.ZCount(ctx, workers, fmt.Sprint(now.Add(-within).UnixMilli()), "+inf").Result()
}

// Obliterate deletes every key of queue (its tag's, on the master holding
// its slot) and its entry in the app's registry, lease and leader record,
// and returns the number of keys deleted. The caller makes sure no worker
// runs the queue.
func Obliterate(ctx context.Context, c redis.UniversalClient, s KeySpace, queue, leaderRecord string) (int64, error) {
	node := redis.Cmdable(c)
	if cc, ok := c.(*redis.ClusterClient); ok {
		m, err := cc.MasterForKey(ctx, s.TaskConfig(queue))
		if err != nil {
			return 0, err
		}
		node = m
	}
	var deleted int64
	iter := node.Scan(ctx, 0, s.TaskPattern(queue), 1000).Iterator()
	batch := make([]string, 0, 500)
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		n, err := node.Unlink(ctx, batch...).Result()
		deleted += n
		batch = batch[:0]
		return err
	}
	for iter.Next(ctx) {
		batch = append(batch, iter.Val())
		if len(batch) == cap(batch) {
			if err := flush(); err != nil {
				return deleted, err
			}
		}
	}
	if err := iter.Err(); err != nil {
		return deleted, err
	}
	if err := flush(); err != nil {
		return deleted, err
	}
	if err := c.HDel(ctx, s.TaskQueues(), queue).Err(); err != nil {
		return deleted, err
	}
	n, err := c.Del(ctx, s.LeaderOf(TaskLease(queue))).Result()
	deleted += n
	if err != nil {
		return deleted, err
	}
	n, err = c.Del(ctx, leaderRecord).Result()
	return deleted + n, err
}
