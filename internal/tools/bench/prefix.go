package bench

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/leatdev/leat/app"
	"github.com/leatdev/leat/internal/rdb"
	"github.com/redis/go-redis/v9"
)

// Names the benchmark writes under.
const (
	// PrefixRoot starts the key prefix of every benchmark.
	PrefixRoot = "leat-bench:"
	appName    = "bench"
	streamName = "events"
)

// DropTimeout bounds the final deletion of a benchmark's keys, which runs
// even when the benchmark's context is cancelled.
const DropTimeout = 30 * time.Second

// Space is the key prefix of one benchmark on one server: PrefixRoot and a
// random suffix, so that benchmarks never meet each other's keys nor an
// app's.
type Space struct {
	client redis.UniversalClient
	prefix string
}

// NewSpace returns a fresh space on client, which must not be a Redis
// Cluster client (see the package documentation).
func NewSpace(client redis.UniversalClient) (Space, error) {
	switch client.(type) {
	case nil:
		return Space{}, errors.New("bench: no Redis client")
	case *redis.ClusterClient:
		return Space{}, errors.New("bench: Redis Cluster is not supported (the raw reader's XREADGROUP over all partitions would cross slots)")
	}
	return Space{client: client, prefix: PrefixRoot + uuid.NewString()[:8]}, nil
}

// NewApp returns an App named "bench" on the space's prefix, using its
// client. The caller closes it (which leaves the client open).
func (s Space) NewApp(cfg Config) (*app.App, error) {
	return app.New(app.Config{
		Name:       appName,
		Client:     s.client,
		KeyPrefix:  s.prefix,
		Partitions: cfg.Partitions,
		Logger:     cfg.Logger,
	})
}

// keys returns the key space of the benchmark app.
func (s Space) keys() rdb.KeySpace { return rdb.NewKeySpace(s.prefix, appName) }

// Prefix is the space's key prefix.
func (s Space) Prefix() string { return s.prefix }

// Client is the client the space was made with.
func (s Space) Client() redis.UniversalClient { return s.client }

// Clean deletes every key of the space.
func (s Space) Clean(ctx context.Context) error {
	it := s.client.Scan(ctx, 0, s.prefix+":*", 1000).Iterator()
	batch := make([]string, 0, 1000)
	for it.Next(ctx) {
		batch = append(batch, it.Val())
		if len(batch) == cap(batch) {
			if err := s.client.Unlink(ctx, batch...).Err(); err != nil {
				return fmt.Errorf("delete benchmark keys: %w", err)
			}
			batch = batch[:0]
		}
	}
	if err := it.Err(); err != nil {
		return fmt.Errorf("scan benchmark keys: %w", err)
	}
	if len(batch) > 0 {
		if err := s.client.Unlink(ctx, batch...).Err(); err != nil {
			return fmt.Errorf("delete benchmark keys: %w", err)
		}
	}
	return nil
}

// Drop deletes every key of the space at the end of a benchmark, also when
// ctx is already cancelled.
func (s Space) Drop(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), DropTimeout)
	defer cancel()
	return s.Clean(ctx)
}

// namedClient returns a new client of the space's server whose connections
// are named name (CLIENT SETNAME). The caller closes it.
func (s Space) namedClient(name string) (*redis.Client, error) {
	c, ok := s.client.(*redis.Client)
	if !ok {
		return nil, fmt.Errorf("bench: a %T cannot be copied; use a standalone client", s.client)
	}
	o := c.Options()
	return redis.NewClient(&redis.Options{
		Network: o.Network, Addr: o.Addr, Dialer: o.Dialer, TLSConfig: o.TLSConfig,
		Username: o.Username, Password: o.Password, CredentialsProvider: o.CredentialsProvider, DB: o.DB,
		Protocol: o.Protocol, ClientName: name,
	}), nil
}
