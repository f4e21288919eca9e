// Flow node tasks: task_flow_nodes.lua creates a flow's node tasks in one
// queue, waiting; task_flow_release.lua makes them pending when their
// parents have ended. Both run in the queue's slot with the common KEYS.

package rdb

import (
	"context"
	_ "embed"

	"github.com/redis/go-redis/v9"
)

var (
	//go:embed task_flow_nodes.lua
	flowNodesSrc string
	//go:embed task_flow_release.lua
	flowReleaseSrc string
	//go:embed task_flow_revive.lua
	flowReviveSrc string

	flowNodes   = script("task_flow_nodes.lua", flowNodesSrc)
	flowRelease = script("task_flow_release.lua", flowReleaseSrc)
	flowRevive  = script("task_flow_revive.lua", flowReviveSrc)
)

// FlowRevive makes the cancelled tasks ids of the queue of keys k waiting
// again and returns how many moved (a task in any other state stays).
//
// KEYS: Keys, then each task's hash. ARGV: the flow's generation (kept in
// each task: CancelNode), the task IDs.
func FlowRevive(ctx context.Context, c redis.Scripter, k []string, gen int64, ids []string) (int, error) {
	var keys []string
	args := make([]any, 0, 1+len(ids))
	args = append(args, gen)
	for _, id := range ids {
		keys = append(keys, k[0]+id)
		args = append(args, id)
	}
	return flowRevive.Run(ctx, c, taskKeys(k, keys...), args...).Int()
}

// FlowNodes creates the waiting tasks of a flow in the queue of keys k
// (Keys) and returns how many it created (a task that exists is left
// alone).
//
// KEYS: Keys, then each task's hash. ARGV: n, then id, payload, level,
// max retries, timeout ms, retention ms, key, webhook, webhook secret,
// headers per task.
func FlowNodes(ctx context.Context, c redis.Scripter, k []string, tasks []NewTask) (int, error) {
	var keys []string
	args := make([]any, 0, 1+10*len(tasks))
	args = append(args, len(tasks))
	for _, t := range tasks {
		keys = append(keys, k[0]+t.ID)
		args = append(args, t.ID, t.Payload, t.Level, t.MaxRetries, t.Timeout.Milliseconds(), t.Retention.Milliseconds(),
			t.Key, t.Webhook, t.WebhookSecret, t.Headers)
	}
	n, err := flowNodes.Run(ctx, c, taskKeys(k, keys...), args...).Int()
	return n, err
}

// FlowRelease makes the waiting tasks ids of the queue of keys k pending
// and returns how many moved (a task in any other state stays as it is).
//
// KEYS: Keys, then each task's hash. ARGV: the task IDs.
func FlowRelease(ctx context.Context, c redis.Scripter, k []string, ids []string) (int, error) {
	var keys []string
	args := make([]any, len(ids))
	for i, id := range ids {
		keys = append(keys, k[0]+id)
		args[i] = id
	}
	return flowRelease.Run(ctx, c, taskKeys(k, keys...), args...).Int()
}

// TaskStates returns the state, result and error of tasks (hashes given
// whole, of any queues) in one round trip; a missing task has state "".
func TaskStates(ctx context.Context, c redis.UniversalClient, hashes []string) ([][3]string, error) {
	pipe := c.Pipeline()
	cmds := make([]*redis.SliceCmd, len(hashes))
	for i, h := range hashes {
		cmds[i] = pipe.HMGet(ctx, h, "s", "res", "err")
	}
	if _, err := pipe.Exec(ctx); err != nil && err != redis.Nil {
		return nil, err
	}
	out := make([][3]string, len(hashes))
	for i, cmd := range cmds {
		v := cmd.Val()
		for j := 0; j < 3 && j < len(v); j++ {
			out[i][j] = toString(v[j])
		}
	}
	return out, nil
}
