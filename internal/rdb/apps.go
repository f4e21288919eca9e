package rdb

import (
	"context"
	"slices"
	"strings"
	"sync"

	"github.com/redis/go-redis/v9"
)

// HasRegistry reports whether the app of s has a registry: a stream or a
// task queue some program declared (EXISTS of both hashes, one slot).
func HasRegistry(ctx context.Context, c redis.Cmdable, s KeySpace) (bool, error) {
	n, err := c.Exists(ctx, s.Registry(), s.TaskQueues()).Result()
	return n > 0, err
}

// Apps returns, sorted, the names of the apps with a registry under
// prefix. It SCANs the keyspace (of every master on a Cluster), so it is
// for the CLI's error messages, never for a hot path.
func Apps(ctx context.Context, c redis.UniversalClient, prefix string) ([]string, error) {
	probe := NewKeySpace(prefix, "*")
	patterns := []string{probe.Registry(), probe.TaskQueues()}
	var mu sync.Mutex
	seen := map[string]bool{}
	scan := func(ctx context.Context, node redis.Cmdable) error {
		for _, pattern := range patterns {
			head, _, _ := strings.Cut(pattern, "*")
			iter := node.Scan(ctx, 0, pattern, 1000).Iterator()
			for iter.Next(ctx) {
				name := strings.TrimSuffix(strings.TrimPrefix(iter.Val(), head), "}")
				if ValidName(name) {
					mu.Lock()
					seen[name] = true
					mu.Unlock()
				}
			}
			if err := iter.Err(); err != nil {
				return err
			}
		}
		return nil
	}
	var err error
	if cc, ok := c.(*redis.ClusterClient); ok {
		err = cc.ForEachMaster(ctx, func(ctx context.Context, node *redis.Client) error { return scan(ctx, node) })
	} else {
		err = scan(ctx, c)
	}
	if err != nil {
		return nil, err
	}
	apps := make([]string, 0, len(seen))
	for a := range seen {
		apps = append(apps, a)
	}
	slices.Sort(apps)
	return apps, nil
}
