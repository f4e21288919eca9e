package runner

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/leatdev/leat/internal/core"
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
	log    *slog.Logger

	mu      sync.Mutex
	pending map[string][]string // partition key -> IDs
	spare   map[string][]string // a sent batch's memory, to queue acks in next
	kick    chan struct{}

	flushMu sync.Mutex // one flush at a time, so acks of a partition stay ordered
}

func newAcker(client redis.UniversalClient, group string, log *slog.Logger) *acker {
	return &acker{client: client, group: group, log: log, pending: map[string][]string{}, kick: make(chan struct{}, 1)}
}

// add queues ids of partition key for acknowledgement.
func (a *acker) add(key string, ids ...string) {
	a.mu.Lock()
	a.pending[key] = append(a.pending[key], ids...)
	a.mu.Unlock()
	a.nudge()
}

// addDeliveries queues the IDs of ds, entries of partition key, for
// acknowledgement: add without a slice of IDs made per call.
func (a *acker) addDeliveries(key string, ds []core.Delivery) {
	a.mu.Lock()
	q := a.pending[key]
	for i := range ds {
		q = append(q, ds[i].ID)
	}
	a.pending[key] = q
	a.mu.Unlock()
	a.nudge()
}

// nudge wakes the background loop (run).
func (a *acker) nudge() {
	select {
	case a.kick <- struct{}{}:
	default:
	}
}

// ackFlushTimeout bounds each flush of the background loop, retries of
// transient errors included, so that a flush before a release never waits
// long behind it.
const ackFlushTimeout = 5 * time.Second

// flush sends every queued ack. IDs whose XACK failed with a connection
// problem or a transient error reply are queued again, and sent again with
// backoff until ctx ends (see ride); it returns the last such failure.
// Those Redis refused otherwise would be refused again: they are dropped,
// with a warning (see drop).
func (a *acker) flush(ctx context.Context) error {
	a.flushMu.Lock()
	defer a.flushMu.Unlock()
	return ride(ctx, a.flushOnce)
}

// flushOnce is one try of flush; flushMu is held.
func (a *acker) flushOnce(ctx context.Context) error {
	a.mu.Lock()
	batch := a.pending
	if !a.queuedLocked() {
		a.mu.Unlock()
		return nil
	}
	a.pending = a.spare
	if a.pending == nil {
		a.pending = make(map[string][]string, len(batch))
	}
	a.spare = nil
	a.mu.Unlock()
	for key, ids := range batch {
		if len(ids) == 0 { // kept from the spare map: nothing to send
			delete(batch, key)
		}
	}

	retry, refused, err := rdb.Ack(ctx, a.client, a.group, batch)
	for key, rerr := range refused {
		a.drop(key, len(batch[key]), rerr)
	}
	if len(retry) > 0 {
		// Only acks lost to a connection problem or a transient error
		// reply are queued again.
		a.mu.Lock()
		for _, key := range retry {
			a.pending[key] = append(batch[key], a.pending[key]...)
		}
		a.mu.Unlock()
		return err
	}
	// The batch was sent: its memory takes the acks after the next flush.
	for key, ids := range batch {
		clear(ids)
		batch[key] = ids[:0]
	}
	a.mu.Lock()
	a.spare = batch
	a.mu.Unlock()
	return err
}

// drop warns that n acks of partition key were dropped after Redis refused
// them with err (WRONGTYPE: the key is no longer a stream; NOPERM: the
// user may not XACK it): the same acks would be refused again. Their
// entries, if any, stay pending in the group and are delivered again. A
// group deleted under the acker is no refusal: XACK acknowledges nothing
// (its pending entries went with it) and replies 0.
func (a *acker) drop(key string, n int, err error) {
	a.log.Warn("acks dropped: Redis refused them, and would again", "partition_key", key, "acks", n, "error", err)
}

// queued reports whether acks wait to be sent.
func (a *acker) queued() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.queuedLocked()
}

// queuedLocked is queued with a.mu held. Keys of the map may have no IDs
// (see flushOnce).
func (a *acker) queuedLocked() bool {
	for _, ids := range a.pending {
		if len(ids) > 0 {
			return true
		}
	}
	return false
}

// run flushes acks shortly after they are queued until ctx is done. Acks
// queued again after a failed flush (onError is called with its error) are
// tried again after a backoff, even when no new ack comes; acks Redis
// refused are dropped, not tried again (see flush).
func (a *acker) run(ctx context.Context, onError func(error)) {
	t := time.NewTicker(ackInterval)
	defer t.Stop()
	var again <-chan time.Time
	failures := 0
	for {
		select {
		case <-ctx.Done():
			return
		case <-a.kick:
		case <-again:
		}
		again = nil
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		fctx, cancel := context.WithTimeout(ctx, ackFlushTimeout)
		err := a.flush(fctx)
		cancel()
		if err == nil || ctx.Err() != nil {
			failures = 0
			continue
		}
		onError(err)
		if a.queued() {
			failures++
			again = time.After(backoff(writeBackoff, writeMaxBackoff, failures))
		}
	}
}
