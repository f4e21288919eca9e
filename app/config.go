package app

import (
	"errors"
	"fmt"
	"log/slog"

	"github.com/leatdev/leat/internal/keys"
	"github.com/leatdev/leat/stream"
	"github.com/redis/go-redis/v9"
)

// DefaultRedisURL is the Redis server an App connects to when Config names
// neither a URL nor a client.
const DefaultRedisURL = "redis://127.0.0.1:6379"

// Config configures an App. The zero value of every field except Name means
// the documented default. Each field maps to a CLI flag and a LEAT_*
// environment variable (see README.md).
type Config struct {
	// Name of the app: 1 to 128 letters, digits, '_', '.', '-'. Required.
	// Flag --app, env LEAT_APP.
	Name string

	// RedisURL is the server to connect to: redis://, rediss:// (TLS), with
	// optional user:password@ and /db. Default DefaultRedisURL. Ignored when
	// Client is set. Flag --redis, env LEAT_REDIS_URL.
	RedisURL string

	// Client is a caller-owned Redis client (standalone, Sentinel or
	// Cluster). The App uses it and never closes it.
	Client redis.UniversalClient

	// KeyPrefix starts every Redis key of the app. Default "leat".
	// Flag --prefix, env LEAT_PREFIX.
	KeyPrefix string

	// Partitions is the partition count of a stream whose declaration does
	// not set one. Default 16. Flag --partitions, env LEAT_PARTITIONS.
	Partitions int

	// PartitionSize is the approximate maximum length of each partition
	// (XADD MAXLEN ~) of a stream whose declaration does not set one.
	// Default 50,000. Flag --partition-size, env LEAT_PARTITION_SIZE.
	PartitionSize int64

	// Codec encodes records of streams whose declaration does not set one.
	// Default stream.MsgPack.
	Codec stream.Codec

	// SendBatch is how many XADDs one pipelined round trip carries.
	// Default 1,000. Flag --send-batch, env LEAT_SEND_BATCH.
	SendBatch int

	// Logger receives the app's logs. Default slog.Default().
	Logger *slog.Logger
}

// validate checks c and returns it with defaults filled in.
func (c Config) validate() (Config, error) {
	var errs []error
	if err := keys.CheckName("app", c.Name); err != nil {
		errs = append(errs, err)
	}
	if c.KeyPrefix == "" {
		c.KeyPrefix = keys.DefaultPrefix
	} else if !keys.ValidPrefix(c.KeyPrefix) {
		errs = append(errs, fmt.Errorf("key prefix %q is invalid: use letters, digits, '_', '.', '-' or ':'", c.KeyPrefix))
	}
	if c.Client == nil && c.RedisURL == "" {
		c.RedisURL = DefaultRedisURL
	}
	switch {
	case c.Partitions == 0:
		c.Partitions = stream.DefaultPartitions
	case c.Partitions < 0 || c.Partitions > 65536:
		errs = append(errs, fmt.Errorf("partitions %d out of range 1..65536", c.Partitions))
	}
	switch {
	case c.PartitionSize == 0:
		c.PartitionSize = stream.DefaultSize
	case c.PartitionSize < 0:
		errs = append(errs, fmt.Errorf("partition size %d must be positive", c.PartitionSize))
	}
	switch {
	case c.SendBatch == 0:
		c.SendBatch = stream.DefaultSendBatch
	case c.SendBatch < 0:
		errs = append(errs, fmt.Errorf("send batch %d must be positive", c.SendBatch))
	}
	if c.Codec == nil {
		c.Codec = stream.MsgPack
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if err := errors.Join(errs...); err != nil {
		return c, fmt.Errorf("app config: %w", err)
	}
	return c, nil
}
