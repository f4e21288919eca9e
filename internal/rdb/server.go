package rdb

import (
	"context"
	"strings"

	"github.com/redis/go-redis/v9"
)

// Ping checks that the server c talks to answers (PING).
func Ping(ctx context.Context, c redis.UniversalClient) error {
	return c.Ping(ctx).Err()
}

// IsClusterNode reports whether the single server c talks to is a Redis
// Cluster node. It asks CLUSTER INFO (in @slow, not @dangerous), which a
// server without cluster support refuses ("ERR This instance has cluster
// support disabled"), or INFO cluster when the user may not run CLUSTER
// INFO; for a user allowed neither it reports false.
func IsClusterNode(ctx context.Context, c *redis.Client) bool {
	_, err := c.ClusterInfo(ctx).Result()
	switch {
	case err == nil:
		return true
	case !redis.IsPermissionError(err):
		return false
	}
	info, err := c.Info(ctx, "cluster").Result()
	return err == nil && strings.Contains(info, "cluster_enabled:1")
}
