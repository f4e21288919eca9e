package rdb

import (
	"context"

	"github.com/redis/go-redis/v9"
)

// The stream registry (KeySpace.Registry): a hash of stream name to its
// definition (JSON), written by register_stream.lua (RegisterStream).

// StreamDefinition reads the definition of stream name from the registry
// hash (HGET); redis.Nil when the stream is not registered.
func StreamDefinition(ctx context.Context, c redis.UniversalClient, registry, name string) (string, error) {
	return c.HGet(ctx, registry, name).Result()
}

// StreamDefinitions reads every stream definition of the registry hash
// (HGETALL): stream name to definition.
func StreamDefinitions(ctx context.Context, c redis.UniversalClient, registry string) (map[string]string, error) {
	return c.HGetAll(ctx, registry).Result()
}
