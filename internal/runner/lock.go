package runner

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/leatdev/leat/internal/core"
	"github.com/leatdev/leat/internal/lease"
	"github.com/leatdev/leat/internal/rdb"
	"github.com/leatdev/leat/internal/topology"
	"github.com/redis/go-redis/v9"
)

// Partition locks, in the order of their life: acquire, refresh, fence the
// processor's writes, release (see the package doc for the arithmetic).
// Each acquisition takes the lock with a fresh random value and gets a
// fencing token; one refresher per executor extends every lock it holds in
// one pipelined round trip every LockExpiry/3, and each partition's work
// runs in a lease.Trust that ends at the exact moment the lock can no
// longer be trusted, whatever the network does.

// acquire takes p's lock, retrying until it is free or expired, and prepares
// the consumer group. It returns false when p was released meanwhile. On
// success p.lock and p.trust are set.
//
// A lock held by another executor is tried again when its holder announces
// that it released it (a "released" notice on the control stream, see
// freed), or when it expires (its remaining TTL comes with the failed
// attempt), whichever comes first; at the latest after LockExpiry/4, in
// case a notice was missed. An attempt is never made to win a race: Redis
// gives the lock only once it was released or expired.
func (e *Executor) acquire(p *partition) bool {
	fence := e.keys.Fence(e.stream.Name(), e.processor, p.n)
	// One value for every try of this acquisition: a try whose reply was
	// lost may have taken the lock, and the next one then takes it again at
	// once (lease.AcquireValue) instead of waiting for it to expire.
	value := lease.NewValue(e.identity())
	for {
		if p.stopping() {
			return false
		}
		start := lease.Now()
		ctx, cancel := context.WithTimeout(p.life, e.opts.LockExpiry-lease.Margin(e.opts.LockExpiry))
		lock, held, err := lease.AcquireValue(ctx, e.lockc, p.lockKey, fence, value, e.opts.LockExpiry)
		cancel()
		e.stats.attempts.Add(1)
		retry := acquireRetry
		if err == nil {
			p.lock = lock
			p.trust = lease.NewTrust(p.life, lease.Until(start, e.opts.LockExpiry))
			if err := e.prepare(p); err != nil {
				p.log.Warn("partition not prepared; retrying", "error", err)
				p.trust.Cancel(errReleased)
				_ = lock.Release(context.WithoutCancel(p.life), e.lockc)
				p.lock, p.trust = nil, nil
			} else {
				return true
			}
		} else if errors.Is(err, lease.ErrNotObtained) {
			e.stats.busy.Add(1)
			p.log.Debug("lock held by another executor", "holder", held.Holder, "expires_in", held.Left)
			retry = min(max(held.Left+time.Millisecond, time.Millisecond), e.opts.LockExpiry/4)
		} else if p.life.Err() == nil {
			p.log.Debug("lock not obtained", "error", err)
		}
		t := time.NewTimer(retry)
		select {
		case <-t.C:
			if errors.Is(err, lease.ErrNotObtained) {
				e.stats.retriedOnTimer.Add(1)
			}
		case <-p.freed:
			t.Stop()
			e.stats.retriedOnNotice.Add(1)
		case <-p.stop:
			t.Stop()
			return false
		case <-p.life.Done():
			t.Stop()
			return false
		}
	}
}

// acquireRetry is the wait after an attempt that failed for another reason
// than a holder (a connection problem).
const acquireRetry = 50 * time.Millisecond

// freed wakes the acquisition of partition n, whose holder announced that
// it released the lock.
func (e *Executor) freed(n int) {
	e.mu.Lock()
	p := e.owned[n]
	e.mu.Unlock()
	if p != nil {
		select {
		case p.freed <- struct{}{}:
		default:
		}
	}
}

// identity is what lock values carry besides their random token: the
// executor and the worker running it.
func (e *Executor) identity() string {
	if e.worker == "" {
		return e.id
	}
	return e.id + " " + e.worker
}

// refreshLocks extends the locks of every partition e holds, together, every
// LockExpiry/3 until ctx is done. Each attempt is bounded by the trust that
// remains; a lock found gone ends its partition's work at once, and a lock
// not refreshed in time ends it when its trust ends (lease.Trust).
func (e *Executor) refreshLocks(ctx context.Context) {
	every := refreshEvery(e.opts)
	t := time.NewTimer(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		parts := e.held()
		failed := false
		if len(parts) > 0 {
			bound := every
			locks := make([]*lease.Lock, len(parts))
			for i, p := range parts {
				locks[i] = p.lock
				bound = min(bound, p.trust.Remaining())
			}
			start := lease.Now()
			rctx, cancel := context.WithTimeout(ctx, max(bound, time.Millisecond))
			errs := lease.Refresh(rctx, e.lockc, locks, e.opts.LockExpiry)
			cancel()
			e.refreshCount.Add(1)
			for i, p := range parts {
				switch err := errs[i]; {
				case err == nil:
					p.trust.Extend(lease.Until(start, e.opts.LockExpiry))
				case errors.Is(err, lease.ErrNotHeld):
					p.cancel(errLockLost)
				default:
					failed = true
					if ctx.Err() == nil {
						p.log.Debug("partition lock refresh failed", "error", err)
					}
				}
			}
		}
		if failed {
			t.Reset(min(every/4, 200*time.Millisecond)) // retry soon, within the trust left
		} else {
			t.Reset(every)
		}
	}
}

// held returns the partitions whose lock e holds and refreshes.
func (e *Executor) held() []*partition {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := make([]*partition, 0, len(e.ready))
	for n := range e.ready {
		if p := e.owned[n]; p != nil && p.lock != nil && p.trust.Err() == nil {
			out = append(out, p)
		}
	}
	return out
}

// Fenced implements core.Deliveries: fn's commands run in a MULTI/EXEC
// transaction that Redis executes only if p's lock still holds this
// acquisition's value (see rdb.Fenced). Once the executor stopped trusting
// the lock, nothing is sent; a write that fails because trust ended while
// it was on its way (its context, the processor's, ended with the trust)
// returns ErrNotOwner too, wrapping that error.
func (p *partition) Fenced(ctx context.Context, fn func(redis.Pipeliner) error) error {
	if p.lock == nil || p.lost() {
		return core.ErrNotOwner
	}
	err := rdb.Fenced(ctx, p.e.app, p.lockKey, p.lock.Value(), fn)
	if errors.Is(err, rdb.ErrNotHeld) {
		p.cancel(errLockLost)
		return core.ErrNotOwner
	}
	if err != nil && p.lost() {
		return fmt.Errorf("%w: %w", core.ErrNotOwner, err)
	}
	return err
}

// Token implements core.Deliveries: the fencing token of this acquisition.
func (p *partition) Token() int64 {
	if p.lock == nil {
		return 0
	}
	return p.lock.Token()
}

// release deletes p's lock if this acquisition still holds it, returning
// lease.ErrNotHeld when it did not. On Redis Cluster, a try that a failover
// refused or cut off (topology.Classify: not run, or its connection broke
// after it was written) is made again after a reload of the slot map, with
// backoff from releaseRetryMin to releaseRetryMax, until the lock's trust
// ends (ctx's deadline does not apply there: a failover outlasts a
// shutdown's few seconds); from then on the lock expires by itself about as
// soon as a release could free it. After a try that may have run, a lock found
// gone counts as released by it. So a partition handed over while its
// master dies is freed when a replica took over, and its next owner, woken
// by the release notice, does not wait for the lock to expire.
func (e *Executor) release(ctx context.Context, p *partition) error {
	_, cluster := e.lockc.(*redis.ClusterClient)
	if cluster {
		ctx = context.WithoutCancel(ctx)
	}
	wait := releaseRetryMin
	mayHaveRun := false
	for {
		left := time.Duration(p.trust.Until() - lease.Now())
		rctx, cancel := context.WithTimeout(ctx, max(left, time.Millisecond))
		err := p.lock.Release(rctx, e.lockc)
		cancel()
		outcome := topology.Classify(err)
		switch {
		case err == nil:
			return nil
		case errors.Is(err, lease.ErrNotHeld) && mayHaveRun:
			return nil
		case !cluster || outcome == topology.Final:
			return err
		case outcome == topology.Unknown:
			mayHaveRun = true
		}
		if time.Duration(p.trust.Until()-lease.Now()) <= wait {
			return err
		}
		topology.Reload(e.lockc)
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return err
		case <-t.C:
		}
		wait = min(2*wait, releaseRetryMax)
	}
}

// Release retries on Cluster (see release).
const (
	releaseRetryMin = 20 * time.Millisecond
	releaseRetryMax = 500 * time.Millisecond
)
