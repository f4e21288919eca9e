package rdb

import (
	"context"
	"errors"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// WorkerCommands are the commands a worker's Redis user needs: the minimal
// ACL of docs/configuration.md ("Redis ACL"), which the control plane grants
// the Redis users it creates for its worker pools, on the app's key prefix
// and channels.
var WorkerCommands = []string{
	"+ping", "+hello", "+select", "+client|id", "+client|unblock", "+cluster|info", "+type",
	"+eval", "+evalsha", "+script|load", "+multi", "+exec", "+watch", "+unwatch", "+time",
	"+publish", "+subscribe",
	"+get", "+mget", "+set", "+del", "+exists", "+incr", "+incrby", "+pexpire", "+pttl", "+persist",
	"+hget", "+hmget", "+hgetall", "+hkeys", "+hexists", "+hset", "+hsetnx", "+hdel", "+hincrby", "+renamenx",
	"+lpush", "+rpush", "+lpop", "+lindex", "+llen", "+lrem", "+sadd", "+srem", "+blpop",
	"+zadd", "+zcard", "+zcount", "+zrange", "+zrangebyscore", "+zremrangebyscore", "+zremrangebyrank", "+zrem", "+zscore",
	"+xadd", "+xdel", "+xlen", "+xrange", "+xrevrange", "+xread", "+xreadgroup", "+xack", "+xpending", "+xtrim",
	"+xautoclaim", "+xclaim", "+xgroup|create", "+xgroup|setid", "+xgroup|delconsumer",
	"+xinfo|stream", "+xinfo|groups", "+xinfo|consumers",
}

// SetWorkerUser creates or updates the Redis user name as a worker of the
// keys and channels under prefix: password as its only password, and
// exactly WorkerCommands on "~PREFIX:*" and "&PREFIX:*". It is idempotent,
// so every control plane replica may run it; connections already
// authenticated as the user stay open.
func SetWorkerUser(ctx context.Context, c redis.UniversalClient, name, password, prefix string) error {
	args := []any{"ACL", "SETUSER", name, "on", "resetpass", ">" + password, "resetkeys", "~" + prefix + ":*",
		"resetchannels", "&" + prefix + ":*", "-@all"}
	for _, cmd := range WorkerCommands {
		args = append(args, cmd)
	}
	return c.Do(ctx, args...).Err()
}

// SavePlaneWorker writes the record of worker id (key: KeySpace.PlaneWorker)
// to live for ttl, indexes it in workers (KeySpace.PlaneWorkers) and drops
// the index's expired entries, in one transaction.
func SavePlaneWorker(ctx context.Context, c redis.UniversalClient, workers, key, id string, rec []byte, ttl time.Duration, now time.Time) error {
	_, err := c.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.Set(ctx, key, rec, ttl)
		p.ZAdd(ctx, workers, redis.Z{Score: float64(now.Add(ttl).UnixMilli()), Member: id})
		p.ZRemRangeByScore(ctx, workers, "-inf", "("+strconv.FormatInt(now.UnixMilli(), 10))
		return nil
	})
	return err
}

// PlaneWorker returns the record at key (KeySpace.PlaneWorker); ok is
// false when it expired or never was.
func PlaneWorker(ctx context.Context, c redis.UniversalClient, key string) (rec []byte, ok bool, err error) {
	b, err := c.Get(ctx, key).Bytes()
	if err == redis.Nil {
		return nil, false, nil
	}
	return b, err == nil, err
}

// DropPlaneWorker deletes the record of worker id and its index entry.
func DropPlaneWorker(ctx context.Context, c redis.UniversalClient, workers, key, id string) error {
	_, err := c.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.Del(ctx, key)
		p.ZRem(ctx, workers, id)
		return nil
	})
	return err
}

// PlaneWorkers returns the records of the workers indexed in workers
// (KeySpace.PlaneWorkers) whose entries have not expired at now: their
// IDs, then the records read with one MGET of keyOf(id) (nil for a record
// that expired in between). Two round trips, O(workers).
func PlaneWorkers(ctx context.Context, c redis.UniversalClient, workers string, keyOf func(id string) string, now time.Time) ([][]byte, error) {
	ids, err := c.ZRangeByScore(ctx, workers, &redis.ZRangeBy{Min: strconv.FormatInt(now.UnixMilli(), 10), Max: "+inf"}).Result()
	if err != nil || len(ids) == 0 {
		return nil, err
	}
	ks := make([]string, len(ids))
	for i, id := range ids {
		ks[i] = keyOf(id)
	}
	vals, err := c.MGet(ctx, ks...).Result()
	if err != nil {
		return nil, err
	}
	out := make([][]byte, 0, len(vals))
	for _, v := range vals {
		if s, ok := v.(string); ok {
			out = append(out, []byte(s))
		}
	}
	return out, nil
}

// SetPlaneRevision records rec, the revision resolved for deployment, in
// revisions (KeySpace.PlaneRevisions).
func SetPlaneRevision(ctx context.Context, c redis.UniversalClient, revisions, deployment string, rec []byte) error {
	return c.HSet(ctx, revisions, deployment, rec).Err()
}

// PlaneRevisions returns every record of revisions, by deployment.
func PlaneRevisions(ctx context.Context, c redis.UniversalClient, revisions string) (map[string]string, error) {
	return c.HGetAll(ctx, revisions).Result()
}

// PlaneRevision returns the revision record of one deployment (HGET), and
// nil when there is none.
func PlaneRevision(ctx context.Context, c redis.UniversalClient, revisions, deployment string) ([]byte, error) {
	b, err := c.HGet(ctx, revisions, deployment).Bytes()
	if errors.Is(err, redis.Nil) {
		return nil, nil
	}
	return b, err
}
