package app

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/leatdev/leat/internal/lease"
	"github.com/redis/go-redis/v9"
)

// leadership keeps the app's leader lease for this worker when it can, or
// a scoped lease (Schedule.Lease: the same election on a key of its own,
// its terms drawn from the same counter).
//
// The lease is a lock on the app's leader key (internal/lease), taken with
// a fresh random value per acquisition (the worker ID is kept beside it for
// logs and inspect) and TTL = LeaderLease. Each acquisition starts a new
// term, numbered by the lease's fencing token: terms grow strictly from one
// leader to the next. A worker tries to take the lease every LeaderLease/10;
// the leader refreshes it every LeaderLease/3, each attempt bounded by the
// trust that remains. A crashed leader is replaced at most LeaderLease +
// LeaderLease/10 after its last refresh.
//
// The leader trusts its lease until the start of its last successful
// acquisition or refresh + LeaderLease − margin (margin = LeaderLease/100 +
// min(LeaderLease/10, 500ms)), so it stops acting as leader before the key
// can expire in Redis and another worker can take it. The term's context
// (lease.Trust), which leader-only tasks run in, ends at that moment
// exactly, whatever the network does. On a graceful stop the term ends
// first, leader-only tasks are waited for, and then the lease is released.
type leadership struct {
	a     *App
	lease time.Duration
	key   string // the lease's key: the app's leader, or a scoped one
	scope string // the scope's name (Schedule.Lease), "" for the app's leader

	mu       sync.Mutex
	term     *term          // nil when not leading
	changed  chan struct{}  // closed and replaced on every change
	resigned bool           // no new term: the worker is stopping
	ends     sync.WaitGroup // watches of terms' ends that may still run
}

// term is one acquisition of the leader lease.
type term struct {
	lock    *lease.Lock
	trust   *lease.Trust // carries the term number (LeaderTerm)
	unwatch func() bool  // stops the watch that ends the term with its trust
}

// close ends t now, on the caller's goroutine, with cause: nothing of the
// term outlives a stop.
func (l *leadership) close(t *term, cause error) {
	l.mu.Lock()
	unwatch := t.unwatch
	l.mu.Unlock()
	if unwatch != nil && unwatch() {
		l.ends.Done() // the watch will not run
	}
	t.trust.Cancel(cause)
	l.end(t)
}

// errResigned ends a term on a graceful stop.
var errResigned = errors.New("app: leadership released on shutdown")

// errLeaseLost ends a term whose lease was found taken or expired.
var errLeaseLost = errors.New("app: leader lease lost")

type termKey struct{}

// LeaderTerm returns the leader term of a context given to a leader-only
// background task: a number that grows strictly from one leader to the
// next (the leader lease's fencing token). Like a partition's fencing token,
// it lets a store outside Redis refuse writes of a leader that paused past
// its lease and resumed. ok is false for other contexts.
func LeaderTerm(ctx context.Context) (term int64, ok bool) {
	term, ok = ctx.Value(termKey{}).(int64)
	return term, ok
}

// newLeadership returns the leadership of the lease of scope ("": the
// app's leader).
func newLeadership(a *App, scope string) *leadership {
	key := a.keys.Leader()
	if scope != "" {
		key = a.keys.LeaderOf(scope)
	}
	return &leadership{a: a, lease: a.cfg.LeaderLease, key: key, scope: scope, changed: make(chan struct{})}
}

// leaderOf returns the leadership of scope ("": the app's leader), made
// when the first task of the scope is registered (Background).
func (a *App) leaderOf(scope string) *leadership {
	if scope == "" {
		return a.leader
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.scopedLocked(scope)
}

// scopedLocked returns the leadership of scope, made on first use; a.mu is
// held.
func (a *App) scopedLocked(scope string) *leadership {
	for _, l := range a.scoped {
		if l.scope == scope {
			return l
		}
	}
	l := newLeadership(a, scope)
	a.scoped = append(a.scoped, l)
	return l
}

// leaderships returns the app's leadership and its scoped ones.
func (a *App) leaderships() []*leadership {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]*leadership{a.leader}, a.scoped...)
}

// logAttrs are the attributes of the leadership's log lines.
func (l *leadership) logAttrs(t *term) []any {
	if l.scope == "" {
		return []any{"term", t.lock.Token()}
	}
	return []any{"lease", l.scope, "term", t.lock.Token()}
}

// IsLeader reports whether this worker holds the app's leader lease and may
// still trust it.
func (a *App) IsLeader() bool { return a.leader.current() != nil }

// current returns the term this worker leads in, nil when it does not lead
// (or can no longer trust its lease).
func (l *leadership) current() *term {
	l.mu.Lock()
	t := l.term
	l.mu.Unlock()
	if t == nil || t.trust.Err() != nil {
		return nil
	}
	return t
}

// watch returns a channel closed at the next change of leadership.
func (l *leadership) watch() <-chan struct{} {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.changed
}

// begin records the start of term t; it returns false, and ends t, when
// the worker resigned meanwhile.
func (l *leadership) begin(t *term) bool {
	l.mu.Lock()
	if l.resigned {
		l.mu.Unlock()
		t.trust.Cancel(errResigned)
		return false
	}
	l.term = t
	close(l.changed)
	l.changed = make(chan struct{})
	// The term ends at the exact end of trust (or when cancelled): announce
	// it then, not at the next refresh attempt.
	l.ends.Add(1)
	t.unwatch = context.AfterFunc(t.trust, func() { defer l.ends.Done(); l.end(t) })
	l.mu.Unlock()
	l.a.logger.Info("became leader", l.logAttrs(t)...)
	return true
}

// end records that term t is over, if it is still the current one.
func (l *leadership) end(t *term) {
	l.mu.Lock()
	if l.term != t {
		l.mu.Unlock()
		return
	}
	l.term = nil
	close(l.changed)
	l.changed = make(chan struct{})
	l.mu.Unlock()
	cause := context.Cause(t.trust)
	if errors.Is(cause, errResigned) {
		l.a.logger.Info("leadership released", l.logAttrs(t)...)
	} else {
		l.a.logger.Warn("leadership lost", append(l.logAttrs(t), "cause", cause)...)
	}
}

// resign ends the current term, if any, and any later one, without
// releasing the lease: the caller waits for leader-only tasks before run
// releases it.
func (l *leadership) resign() {
	l.mu.Lock()
	t := l.term
	l.resigned = true
	l.mu.Unlock()
	if t != nil {
		l.close(t, errResigned)
	}
}

// run campaigns for and keeps the lease until ctx is done, then releases it
// (after resign and the leader-only tasks, see RunProcessors). lockc is the
// lock client (lease.Client), shared by the worker's leaderships.
func (l *leadership) run(ctx context.Context, lockc redis.UniversalClient) {
	l.mu.Lock()
	l.resigned = false // a new run of the worker
	l.mu.Unlock()
	defer l.ends.Wait()                          // nothing of a term outlives run
	key, counter := l.key, l.a.keys.LeaderTerm() // one counter: terms grow across leases
	every := l.lease / 3
	var cur *term
	// One lock value per campaign, kept across its tries: a try whose reply
	// was lost may have taken the lease, and the next one then takes it
	// again at once (lease.AcquireValue) instead of waiting for it to
	// expire. A new campaign, after a term, draws a new one.
	value := ""
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			if cur != nil {
				l.close(cur, errResigned)
				rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
				_ = cur.lock.Release(rctx, lockc)
				cancel()
			}
			return
		case <-t.C:
		}
		if cur != nil && cur.trust.Err() != nil {
			cur = nil // trust ended (expired, or resigned): campaign again
		}
		next := every
		if cur == nil {
			start := lease.Now()
			cctx, cancel := context.WithTimeout(ctx, every)
			if value == "" {
				value = lease.NewValue(l.a.cfg.WorkerID)
			}
			lock, _, err := lease.AcquireValue(cctx, lockc, key, counter, value, l.lease)
			cancel()
			if err == nil {
				value = ""
				// Not derived from ctx: on a stop the term ends as resigned
				// (below), before the lease is released.
				parent := context.WithValue(context.WithoutCancel(ctx), termKey{}, lock.Token())
				cur = &term{lock: lock, trust: lease.NewTrust(parent, lease.Until(start, l.lease))}
				if !l.begin(cur) {
					rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
					_ = lock.Release(rctx, lockc)
					cancel()
					cur = nil
				}
			} else {
				next = l.lease / 10 // campaign often: take over soon after the lease expires
			}
		} else {
			start := lease.Now()
			rctx, cancel := context.WithTimeout(ctx, max(min(every, cur.trust.Remaining()), time.Millisecond))
			err := lease.Refresh(rctx, lockc, []*lease.Lock{cur.lock}, l.lease)[0]
			cancel()
			switch {
			case err == nil:
				cur.trust.Extend(lease.Until(start, l.lease))
			case errors.Is(err, lease.ErrNotHeld):
				cur.trust.Cancel(errLeaseLost)
				cur, next = nil, l.lease/10
			default:
				next = every / 4 // a transient failure: retry soon, within the trust left
			}
		}
		t.Reset(next)
	}
}
