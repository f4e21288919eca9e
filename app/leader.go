package app

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bsm/redislock"
)

// leadership keeps the app's leader lease for this worker when it can.
//
// The lease is a lock (bsm/redislock) on the app's leader key holding the
// worker ID, with TTL = LeaderLease. A worker tries to take it every
// LeaderLease/10; the leader refreshes it every LeaderLease/3. A crashed
// leader is replaced at most LeaderLease + LeaderLease/10 after its last
// refresh. The leader trusts its
// lease until the start of its last successful refresh + LeaderLease − margin
// (margin = LeaderLease/10, at most 500ms, plus 1% for clock rates), so it
// stops acting as leader before the key can expire in Redis and another
// worker can take it. On a graceful stop the lease is released at once.
type leadership struct {
	a        *App
	lease    time.Duration
	leader   atomic.Bool
	trustEnd atomic.Int64 // monotonic ns

	mu      sync.Mutex
	changed chan struct{} // closed and replaced on every change
}

var monoStart = time.Now()

func mono() int64 { return int64(time.Since(monoStart)) }

func newLeadership(a *App) *leadership {
	return &leadership{a: a, lease: a.cfg.LeaderLease, changed: make(chan struct{})}
}

func (l *leadership) margin() time.Duration {
	return l.lease/100 + min(l.lease/10, 500*time.Millisecond)
}

// IsLeader reports whether this worker holds the app's leader lease and may
// still trust it.
func (a *App) IsLeader() bool { return a.leader.isLeader() }

func (l *leadership) isLeader() bool { return l.leader.Load() && mono() < l.trustEnd.Load() }

// watch returns a channel closed at the next change of leadership.
func (l *leadership) watch() <-chan struct{} {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.changed
}

// set records whether this worker leads; why, when given, is logged at info
// level instead of the default messages.
func (l *leadership) set(v bool, why string) {
	if l.leader.Swap(v) == v {
		return
	}
	l.mu.Lock()
	close(l.changed)
	l.changed = make(chan struct{})
	l.mu.Unlock()
	switch {
	case why != "":
		l.a.logger.Info(why)
	case v:
		l.a.logger.Info("became leader")
	default:
		l.a.logger.Warn("leadership lost")
	}
}

// run campaigns for and keeps the lease until ctx is done, then releases it.
func (l *leadership) run(ctx context.Context) {
	locker := redislock.New(l.a.client)
	key := l.a.keys.Leader()
	every := l.lease / 3
	var lock *redislock.Lock
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			l.set(false, "leadership released")
			if lock != nil {
				rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
				_ = lock.Release(rctx)
				cancel()
			}
			return
		case <-t.C:
		}
		start := mono()
		cctx, cancel := context.WithTimeout(ctx, every)
		var err error
		if lock == nil {
			lock, err = locker.Obtain(cctx, key, l.lease, &redislock.Options{Token: l.a.cfg.WorkerID})
			if err != nil {
				lock = nil
			}
		} else {
			err = lock.Refresh(cctx, l.lease, nil)
			if errors.Is(err, redislock.ErrNotObtained) {
				lock = nil
			}
		}
		cancel()
		switch {
		case err == nil:
			l.trustEnd.Store(start + int64(l.lease-l.margin()))
			l.set(true, "")
		case lock == nil || mono() >= l.trustEnd.Load():
			l.set(false, "")
		}
		next := every
		switch {
		case lock == nil:
			next = l.lease / 10 // campaign often: take over soon after the lease expires
		case err != nil:
			next = every / 4 // refresh failed for a transient reason: retry soon
		}
		t.Reset(next)
	}
}
