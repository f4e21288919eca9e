package app

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/google/uuid"
	"github.com/leatdev/leat/executor"

	"github.com/leatdev/leat/internal/core"
	"github.com/leatdev/leat/internal/netguard"
	"github.com/leatdev/leat/internal/rdb"
	"github.com/leatdev/leat/middleware"
	"github.com/leatdev/leat/stream"
	"github.com/redis/go-redis/v9"
)

// DefaultRedisURL is the Redis server an App connects to when Config names
// neither a URL nor a client.
const DefaultRedisURL = "redis://127.0.0.1:6379"

// DefaultMaxTaskConcurrency is the highest concurrency of one task queue on
// one worker by default (Config.MaxTaskConcurrency).
const DefaultMaxTaskConcurrency = 1000

// DefaultLeaderLease is the leader lease TTL by default.
const DefaultLeaderLease = 10 * time.Second

// Config configures an App. The zero value of every field except Name means
// the documented default. Each field maps to a CLI flag and a LEAT_*
// environment variable (see docs/configuration.md).
type Config struct {
	// Name of the app: 1 to 128 letters, digits, '_', '.', '-'. Required.
	// Flag --app, env LEAT_APP.
	Name string

	// RedisURL is the server to connect to: redis://, rediss:// (TLS), with
	// optional user:password@ and /db. Default DefaultRedisURL. Ignored when
	// Client is set. Flag --redis, env LEAT_REDIS_URL.
	//
	// A URL naming more nodes with addr query parameters is a Redis
	// Cluster URL (see Cluster): redis://[USER:PASSWORD@]HOST:PORT?addr=HOST2:PORT2&addr=HOST3:PORT3.
	//
	// A URL naming a master with master_name is a Redis Sentinel URL: the
	// App asks the sentinels for the master and follows its failovers
	// (redis.NewFailoverClient):
	// redis://[USER:PASSWORD@]SENTINEL:PORT[/DB]?master_name=NAME&addr=SENTINEL2:PORT.
	// The user-info authenticates to the sentinels; the master's own
	// credentials, when it has some, are the username and password query
	// parameters (see ParseSentinelURL).
	RedisURL string

	// Cluster says that RedisURL names a seed node of a Redis Cluster: the
	// App makes a cluster client, which finds the other nodes and follows
	// the slots, with the same TLS and credentials for every node. Default
	// false, except that a RedisURL with addr parameters is always a
	// cluster. Without it, connecting to a cluster node fails with
	// ErrClusterNode before anything is written. Ignored when Client is
	// set. Flag --cluster, env LEAT_REDIS_CLUSTER.
	Cluster bool

	// TLS configures the TLS of a rediss:// RedisURL: CA, client
	// certificate and key (mutual TLS), server name. Ignored when Client is
	// set. Flags --tls-ca, --tls-cert, --tls-key, --tls-server-name.
	TLS TLSConfig

	// Client is a caller-owned Redis client (standalone, Sentinel or
	// Cluster). The App uses it and never closes it.
	Client redis.UniversalClient

	// KeyPrefix starts every Redis key of the app. Default "leat".
	// Flag --prefix, env LEAT_PREFIX.
	KeyPrefix string

	// Partitions is the partition count of a stream whose declaration does
	// not set one. Default 16.
	Partitions int

	// PartitionSize is the approximate maximum length of each partition
	// (XADD MAXLEN ~) of a stream whose declaration does not set one.
	// Default 50,000.
	PartitionSize int64

	// Codec encodes records of streams whose declaration does not set one.
	// Default stream.MsgPack.
	Codec stream.Codec

	// SendBatch is how many XADDs one pipelined round trip carries.
	// Default 1,000.
	SendBatch int

	// Logger receives the app's logs. Default slog.Default().
	// Flag --log-level, env LEAT_LOG_LEVEL (in the CLI).
	Logger *slog.Logger

	// Processing holds the defaults of every processor's options (lock
	// expiry, prefetch, read block, grace period, join delay, start
	// position, failure policy, retry, retries of transient Redis errors);
	// zero fields take the executor package's defaults. See
	// executor.Options. Flags of "leat worker": --lock-expiry, --prefetch,
	// --read-block, --grace, --join-delay, --start, --on-error, --retries,
	// --transient-retry (env LEAT_LOCK_EXPIRY, ...).
	Processing executor.Options

	// Middleware wraps the handling of every event (or batch) of every
	// processor of the app, outside the processor's own (app.Use): the
	// first is outermost. None by default. Set in code only.
	Middleware []middleware.Middleware

	// TaskMiddleware wraps every attempt of every task queue's tasks run by
	// the app's workers, outside the queue's own (task.Use): the first is
	// outermost. None by default. Set in code only.
	TaskMiddleware []middleware.TaskMiddleware

	// MaxTaskConcurrency bounds how many tasks of one queue a worker of the
	// app runs at once: a concurrency set live above it is refused by the
	// app's SetConcurrency, and a worker that reads one above it (set by a
	// program with a higher bound) runs this many and logs it once. Default
	// DefaultMaxTaskConcurrency (1,000). Flag --max-concurrency, env
	// LEAT_MAX_CONCURRENCY.
	MaxTaskConcurrency int

	// WebhookAllow lets task webhooks reach internal addresses, which are
	// refused otherwise (loopback, private, link-local such as a cloud's
	// metadata service, unspecified, multicast): each entry an IP address,
	// a CIDR prefix or a host name. Enqueues check a URL whose host is an
	// IP address; workers check every address they dial. Default none.
	// Flag --webhook-allow (repeatable), env LEAT_WEBHOOK_ALLOW
	// (comma-separated).
	WebhookAllow []string

	// WorkerID names this worker in leadership, logs and inspect.
	// Default: host name, process ID and a random suffix.
	// Flag --worker-id, env LEAT_WORKER_ID.
	WorkerID string

	// LeaderLease is the TTL of the leader lease: a crashed leader is
	// replaced after at most this long. Default 10s.
	// Flag --leader-lease, env LEAT_LEADER_LEASE.
	LeaderLease time.Duration

	// Hooks receive the runtime's events, for metrics: each value implements
	// any of executor's Hook* interfaces (HookEventsProcessed,
	// HookProcessorFailed, HookLockLost, ...). Default none.
	Hooks []executor.Hook
}

// validate checks c and returns it with defaults filled in.
func (c Config) validate() (Config, error) {
	var errs []error
	if err := rdb.CheckName("app", c.Name); err != nil {
		errs = append(errs, err)
	}
	if c.KeyPrefix == "" {
		c.KeyPrefix = rdb.DefaultPrefix
	} else if !rdb.ValidPrefix(c.KeyPrefix) {
		errs = append(errs, fmt.Errorf("key prefix %q is invalid: use letters, digits, '_', '.', '-' or ':'", c.KeyPrefix))
	}
	if c.Client == nil && c.RedisURL == "" {
		c.RedisURL = DefaultRedisURL
	}
	if c.Client == nil && c.Cluster && IsSentinelURL(c.RedisURL) {
		errs = append(errs, errors.New("Cluster is set, but RedisURL is a Sentinel URL (master_name): a master and its sentinels are not a cluster"))
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
		c.SendBatch = core.DefaultSendBatch
	case c.SendBatch < 0:
		errs = append(errs, fmt.Errorf("send batch %d must be positive", c.SendBatch))
	}
	if c.Codec == nil {
		c.Codec = stream.MsgPack
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if _, err := c.Processing.WithDefaults(); err != nil {
		errs = append(errs, fmt.Errorf("processing: %w", err))
	}
	switch {
	case c.MaxTaskConcurrency == 0:
		c.MaxTaskConcurrency = DefaultMaxTaskConcurrency
	case c.MaxTaskConcurrency < 0:
		errs = append(errs, fmt.Errorf("max task concurrency %d must be positive", c.MaxTaskConcurrency))
	}
	if _, err := netguard.New(c.WebhookAllow); err != nil {
		errs = append(errs, fmt.Errorf("webhook allowlist: %w", err))
	}
	if c.WorkerID == "" {
		host, _ := os.Hostname()
		c.WorkerID = fmt.Sprintf("%s-%d-%s", host, os.Getpid(), uuid.NewString()[:8])
	}
	switch {
	case c.LeaderLease == 0:
		c.LeaderLease = DefaultLeaderLease
	case c.LeaderLease < 300*time.Millisecond:
		errs = append(errs, fmt.Errorf("leader lease %s is below 300ms", c.LeaderLease))
	}
	if err := errors.Join(errs...); err != nil {
		return c, fmt.Errorf("app config: %w", err)
	}
	return c, nil
}
