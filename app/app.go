package app

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/leatdev/leat/internal/clock"
	"github.com/leatdev/leat/internal/core"
	"github.com/leatdev/leat/internal/declared"
	"github.com/leatdev/leat/internal/rdb"
	"github.com/leatdev/leat/internal/runner"
	"github.com/leatdev/leat/internal/topology"
	"github.com/leatdev/leat/stream"
	"github.com/redis/go-redis/v9"
)

// An App is a named set of streams and processors sharing one Redis
// connection. Create it with New, declare streams on it with
// stream.Declare, and close it with Close.
type App struct {
	cfg        Config
	client     redis.UniversalClient
	ownsClient bool
	keys       rdb.KeySpace
	catalog    *core.Catalog
	streams    *stream.Catalog // catalog, as users see it
	logger     *slog.Logger

	mu         sync.Mutex
	processors []*Processor
	tasks      []*task
	services   []Service
	executors  []*runner.Executor
	leader     *leadership   // the app's
	scoped     []*leadership // of scoped leader-only work (Schedule.Lease)
	clock      clock.Clock   // of background schedules (a fake one in leattest)

	janitorEvery time.Duration // default janitorEvery; tests set it

	declared sync.Map // what the program declared in-process (package declared)
}

// New validates cfg and returns an App. It does not contact Redis: use Ping
// to check the connection.
func New(cfg Config) (*App, error) {
	cfg, err := cfg.validate()
	if err != nil {
		return nil, err
	}
	a := &App{cfg: cfg, client: cfg.Client, keys: rdb.NewKeySpace(cfg.KeyPrefix, cfg.Name)}
	if a.client == nil {
		if a.client, err = cfg.newOwnClient(); err != nil {
			return nil, err
		}
		a.ownsClient = true
	}
	topology.Attach(a.client) // Cluster: reload the slot map at the first sign of a failover
	a.logger = cfg.Logger.With("app", cfg.Name, "worker", cfg.WorkerID)
	a.catalog = core.NewCatalog(a.client, a.keys, core.Defaults{
		Partitions: cfg.Partitions,
		Size:       cfg.PartitionSize,
		Codec:      cfg.Codec,
		SendBatch:  cfg.SendBatch,
	}, a.logger)
	a.streams = core.WrapCatalog(a.catalog).(*stream.Catalog)
	a.leader = newLeadership(a, "")
	a.clock = clock.Real{}
	return a, nil
}

// Name returns the app's name.
func (a *App) Name() string { return a.cfg.Name }

// Config returns the app's configuration with defaults filled in.
func (a *App) Config() Config { return a.cfg }

// Client returns the app's Redis client.
func (a *App) Client() redis.UniversalClient { return a.client }

// Catalog returns the streams declared on the app; it makes *App a
// stream.Host.
func (a *App) Catalog() *stream.Catalog { return a.streams }

// Logger returns the app's logger.
func (a *App) Logger() *slog.Logger { return a.logger }

// Ping checks that Redis answers. When the App made a single-server client
// from Config.RedisURL, it also checks that the server is not a Redis
// Cluster node, and returns ErrClusterNode if it is: so nothing is written
// before the mistake is found.
func (a *App) Ping(ctx context.Context) error {
	if err := rdb.Ping(ctx, a.client); err != nil {
		return fmt.Errorf("redis: %w", err)
	}
	if c, ok := a.client.(*redis.Client); ok && a.ownsClient {
		if err := checkNotClusterNode(ctx, c); err != nil {
			return fmt.Errorf("redis: %w", err)
		}
	}
	return nil
}

// Register writes the definitions of the app's streams and task queues to
// the registry in Redis, so that tools without the app's code can send,
// enqueue and inspect. A worker (Run) registers when it starts.
func (a *App) Register(ctx context.Context) error {
	if err := a.catalog.Register(ctx); err != nil {
		return err
	}
	for _, r := range declared.Registrars(a) {
		if err := r(ctx); err != nil {
			return err
		}
	}
	return nil
}

// Close closes the Redis client if the App created it.
func (a *App) Close() error {
	if a.ownsClient {
		return a.client.Close()
	}
	return nil
}

func init() {
	declared.Of = func(v any) *sync.Map { return &v.(*App).declared }
	clock.Attach = func(v any, c clock.Clock) error {
		a, ok := v.(*App)
		if !ok || a == nil || c == nil {
			return fmt.Errorf("app: cannot attach a clock to %T", v)
		}
		a.mu.Lock()
		defer a.mu.Unlock()
		if a.executors != nil {
			return fmt.Errorf("app %q: attach the clock before the worker runs", a.cfg.Name)
		}
		a.clock = c
		return nil
	}
	clock.Of = func(v any) clock.Clock {
		a := v.(*App)
		a.mu.Lock()
		defer a.mu.Unlock()
		return a.clock
	}
}
