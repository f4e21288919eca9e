package bench

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/leatdev/leat/app"
	"github.com/leatdev/leat/internal/keys"
	"github.com/redis/go-redis/v9"
)

// Names the benchmark writes under.
const (
	// PrefixRoot starts the key prefix of every benchmark.
	PrefixRoot = "leat-bench:"
	appName    = "bench"
	streamName = "events"
)

// dropTimeout bounds the final deletion of a benchmark's keys, which runs
// even when the benchmark's context is cancelled.
const dropTimeout = 30 * time.Second

// space is the key prefix of one benchmark on one server: PrefixRoot and a
// random suffix, so that benchmarks never meet each other's keys nor an
// app's.
type space struct {
	client redis.UniversalClient
	prefix string
}

// newSpace returns a fresh space on client, which must not be a Redis
// Cluster client (see the package documentation).
func newSpace(client redis.UniversalClient) (space, error) {
	switch client.(type) {
	case nil:
		return space{}, errors.New("bench: no Redis client")
	case *redis.ClusterClient:
		return space{}, errors.New("bench: Redis Cluster is not supported (the raw reader's XREADGROUP over all partitions would cross slots)")
	}
	return space{client: client, prefix: PrefixRoot + uuid.NewString()[:8]}, nil
}

// newApp returns an App named appName on the space's prefix, using client.
// The caller closes it (which leaves client open).
func (s space) newApp(cfg Config) (*app.App, error) {
	return app.New(app.Config{
		Name:       appName,
		Client:     s.client,
		KeyPrefix:  s.prefix,
		Partitions: cfg.Partitions,
		Logger:     cfg.Logger,
	})
}

// keys returns the key space of the benchmark app.
func (s space) keys() keys.Space { return keys.New(s.prefix, appName) }

// clean deletes every key of the space.
func (s space) clean(ctx context.Context) error {
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

// drop deletes every key of the space at the end of a benchmark, also when
// ctx is already cancelled.
func (s space) drop(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), dropTimeout)
	defer cancel()
	return s.clean(ctx)
}
