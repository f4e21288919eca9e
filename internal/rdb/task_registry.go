// Registry: the app's hash of task queue definitions
// (KeySpace.TaskQueues), queue name to JSON.

package rdb

import (
	"context"
	"errors"

	"github.com/redis/go-redis/v9"
)

// Register writes the definition def of queue name to the registry
// registry (HSET).
func Register(ctx context.Context, c redis.Cmdable, registry, name string, def []byte) error {
	return c.HSet(ctx, registry, name, def).Err()
}

// Registered reports whether the registry registry holds queue name
// (HEXISTS).
func Registered(ctx context.Context, c redis.Cmdable, registry, name string) (bool, error) {
	return c.HExists(ctx, registry, name).Result()
}

// Definitions returns the whole registry registry (HGETALL).
func Definitions(ctx context.Context, c redis.Cmdable, registry string) (map[string]string, error) {
	return c.HGetAll(ctx, registry).Result()
}

// Definition returns the definition of queue name in the registry
// registry, and false when it has none.
func Definition(ctx context.Context, c redis.Cmdable, registry, name string) (string, bool, error) {
	v, err := c.HGet(ctx, registry, name).Result()
	if errors.Is(err, redis.Nil) {
		return "", false, nil
	}
	return v, err == nil, err
}

// TasksExist reports, for each of the task hashes, whether it exists, in
// one pipeline of EXISTS (no round trip for none).
func TasksExist(ctx context.Context, c redis.Cmdable, hashes []string) ([]bool, error) {
	pipe := c.Pipeline()
	cmds := make([]*redis.IntCmd, len(hashes))
	for i, h := range hashes {
		cmds[i] = pipe.Exists(ctx, h)
	}
	if len(hashes) > 0 {
		if _, err := pipe.Exec(ctx); err != nil {
			return nil, err
		}
	}
	out := make([]bool, len(hashes))
	for i, cmd := range cmds {
		out[i] = cmd.Val() == 1
	}
	return out, nil
}
