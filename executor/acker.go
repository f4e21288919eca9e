package executor

import (
	"context"
	"sync"
	"time"

	"github.com/leatdev/leat/internal/rdb"
	"github.com/redis/go-redis/v9"
)

// ackInterval is how often acknowledged IDs are flushed with XACK. Acks of
// many events and partitions share one pipelined round trip.
const ackInterval = 5 * time.Millisecond

// acker batches XACKs of one executor's consumer group.
type acker struct {
	client redis.UniversalClient
	group  string

	mu      sync.Mutex
	pending map[string][]string // partition key -> IDs
	kick    chan struct{}

	flushMu sync.Mutex // one flush at a time, so acks of a partition stay ordered
}

func newAcker(client redis.UniversalClient, group string) *acker {
	return &acker{client: client, group: group, pending: map[string][]string{}, kick: make(chan struct{}, 1)}
}

// add queues ids of partition key for acknowledgement.
func (a *acker) add(key string, ids ...string) {
	a.mu.Lock()
	a.pending[key] = append(a.pending[key], ids...)
	a.mu.Unlock()
	select {
	case a.kick <- struct{}{}:
	default:
	}
}

// flush sends every queued ack. IDs whose XACK failed are queued again.
func (a *acker) flush(ctx context.Context) error {
	a.flushMu.Lock()
	defer a.flushMu.Unlock()
	a.mu.Lock()
	batch := a.pending
	if len(batch) == 0 {
		a.mu.Unlock()
		return nil
	}
	a.pending = make(map[string][]string, len(batch))
	a.mu.Unlock()

	retry, err := rdb.Ack(ctx, a.client, a.group, batch)
	if len(retry) > 0 {
		// Only acks lost to a connection problem are queued again.
		a.mu.Lock()
		for _, key := range retry {
			a.pending[key] = append(batch[key], a.pending[key]...)
		}
		a.mu.Unlock()
	}
	return err
}

// run flushes acks shortly after they are queued until ctx is done.
func (a *acker) run(ctx context.Context, onError func(error)) {
	t := time.NewTicker(ackInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-a.kick:
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if err := a.flush(ctx); err != nil && ctx.Err() == nil {
			onError(err)
		}
	}
}
