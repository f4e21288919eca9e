// Schemas: the hash of typed streams' and task queues' schemas
// (KeySpace.Schemas), field SchemaField to JSON.

package rdb

import (
	"context"
	"errors"

	"github.com/redis/go-redis/v9"
)

// SetSchema records the schema of field (SchemaField) in the hash schemas,
// replacing the one before (HSET); an empty schema removes it (HDEL).
func SetSchema(ctx context.Context, c redis.Cmdable, schemas, field string, schema []byte) error {
	if len(schema) == 0 {
		return c.HDel(ctx, schemas, field).Err()
	}
	return c.HSet(ctx, schemas, field, schema).Err()
}

// Schema returns the schema of field in the hash schemas, and false when
// there is none (HGET).
func Schema(ctx context.Context, c redis.Cmdable, schemas, field string) ([]byte, bool, error) {
	b, err := c.HGet(ctx, schemas, field).Bytes()
	if errors.Is(err, redis.Nil) {
		return nil, false, nil
	}
	return b, err == nil, err
}

// DefinitionAndSchema returns the definition of task queue name in the
// registry registry (false when it has none) and its schema, field of the
// hash schemas (nil when it has none), in one round trip (two HGETs in a
// pipeline; both hashes are in the app's slot).
func DefinitionAndSchema(ctx context.Context, c redis.Cmdable, registry, name, schemas, field string) (string, bool, []byte, error) {
	pipe := c.Pipeline()
	def := pipe.HGet(ctx, registry, name)
	sch := pipe.HGet(ctx, schemas, field)
	_, err := pipe.Exec(ctx)
	if err != nil && !errors.Is(err, redis.Nil) {
		return "", false, nil, err
	}
	d, err := def.Result()
	if errors.Is(err, redis.Nil) {
		return "", false, nil, nil
	}
	if err != nil {
		return "", false, nil, err
	}
	s, err := sch.Bytes()
	if errors.Is(err, redis.Nil) {
		return d, true, nil, nil
	}
	return d, true, s, err
}
