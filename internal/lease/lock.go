package lease

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"strings"
	"time"

	"github.com/leatdev/leat/internal/rdb"
	"github.com/leatdev/leat/internal/topology"
	"github.com/redis/go-redis/v9"
)

// Errors of Acquire and Refresh.
var (
	// ErrNotObtained: another holder has the lock.
	ErrNotObtained = errors.New("lease: lock held by another")
	// ErrNotHeld: the lock expired or another holder took it.
	ErrNotHeld = errors.New("lease: lock no longer held")
)

// Lock is one acquisition of a lock.
type Lock struct {
	key   string
	value string
	token int64
}

// Key returns the lock's Redis key.
func (l *Lock) Key() string { return l.key }

// Value returns the lock's value: this acquisition's random token and the
// holder's identity. Fenced reads and writes compare it with the key.
func (l *Lock) Value() string { return l.value }

// Token returns the fencing token of this acquisition.
func (l *Lock) Token() int64 { return l.token }

// NewValue returns a lock value for identity: 16 random bytes in hex, a
// space, the identity.
func NewValue(identity string) string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:]) + " " + identity
}

// Holder returns the identity part of a lock value.
func Holder(value string) string {
	_, id, _ := strings.Cut(value, " ")
	return id
}

// Held describes the holder of a lock that was not obtained.
type Held struct {
	// Holder is the holder's identity.
	Holder string
	// Left is the lock's remaining TTL when it was tried: it expires then
	// unless its holder refreshes or releases it first. Negative when the
	// key had no TTL.
	Left time.Duration
}

// Acquire takes the lock key for identity with the given TTL, and a new
// fencing token from the counter fenceKey (in key's hash slot). It returns
// ErrNotObtained, with the current holder, when the lock is taken.
func Acquire(ctx context.Context, c redis.Scripter, key, fenceKey, identity string, ttl time.Duration) (*Lock, Held, error) {
	return AcquireValue(ctx, c, key, fenceKey, NewValue(identity), ttl)
}

// AcquireValue is Acquire with the lock value (NewValue) of the caller, who
// tries again with the same value after an error that leaves unknown
// whether the try ran (a lost reply): a lock that holds the value is
// taken again, with its TTL set anew and a new fencing token, instead of
// being waited for until it expires. Draw a new value for each acquisition.
func AcquireValue(ctx context.Context, c redis.Scripter, key, fenceKey, value string, ttl time.Duration) (*Lock, Held, error) {
	token, holder, left, ok, err := rdb.AcquireLock(ctx, c, key, fenceKey, value, ttl)
	switch {
	case err != nil:
		return nil, Held{}, err
	case !ok:
		return nil, Held{Holder: Holder(holder), Left: left}, ErrNotObtained
	}
	return &Lock{key: key, value: value, token: token}, Held{}, nil
}

// Release deletes the lock if this acquisition still holds it.
func (l *Lock) Release(ctx context.Context, c redis.Scripter) error {
	ok, err := rdb.ReleaseLock(ctx, c, l.key, l.value)
	if err == nil && !ok {
		err = ErrNotHeld
	}
	return err
}

// refreshBatch bounds the locks one refresh script extends.
const refreshBatch = 1000

// Refresh extends every lock in locks to ttl in one round trip and returns
// one error per lock: nil when extended, ErrNotHeld when the lock is gone,
// or what went wrong. On a single server one script extends up to
// refreshBatch locks, so the cost in commands does not grow with the number
// of locks; on Cluster, whose locks live in different hash slots, one script
// call per lock is pipelined. Bound the call with a context deadline (and a
// client with ContextTimeoutEnabled) by the trust that remains.
func Refresh(ctx context.Context, c redis.UniversalClient, locks []*Lock, ttl time.Duration) []error {
	errs := make([]error, len(locks))
	if len(locks) == 0 {
		return errs
	}
	batch := refreshBatch
	if _, single := c.(*redis.Client); !single {
		batch = 1
	}
	type call struct {
		from int
		cmd  *redis.Cmd
	}
	run := func() ([]call, error) {
		calls := make([]call, 0, (len(locks)+batch-1)/batch)
		err := rdb.Pipelined(ctx, c, func(pipe redis.Pipeliner) {
			for from := 0; from < len(locks); from += batch {
				part := locks[from:min(from+batch, len(locks))]
				keys, values := make([]string, len(part)), make([]string, len(part))
				for i, l := range part {
					keys[i], values[i] = l.key, l.value
				}
				calls = append(calls, call{from, rdb.RefreshLocks(ctx, pipe, keys, values, ttl)})
			}
		})
		return calls, err
	}
	calls, err := run()
	if rdb.IsNoScript(err) {
		if lerr := rdb.Load(ctx, c); lerr != nil {
			for i := range errs {
				errs[i] = lerr
			}
			return errs
		}
		calls, _ = run()
	}
	for _, cl := range calls {
		n := min(batch, len(locks)-cl.from)
		lost, err := rdb.LostLocks(cl.cmd)
		if err != nil {
			for i := range n {
				errs[cl.from+i] = err
			}
			continue
		}
		for _, i := range lost {
			if i < n {
				errs[cl.from+i] = ErrNotHeld
			}
		}
	}
	return errs
}

// Client returns a client for lease commands: a copy of c's settings
// (topology.Pooled) with ContextTimeoutEnabled and a pool of size connections, so that an attempt
// ends at its context's deadline even when the network is frozen with the
// socket open (go-redis otherwise waits for its read timeout); and a
// function that closes it. Clients of other kinds are returned as they are.
func Client(c redis.UniversalClient, size int) (redis.UniversalClient, func()) {
	return topology.Pooled(c, size, func(opt *redis.Options) {
		topology.KeepRetries(opt)
		opt.ContextTimeoutEnabled = true
	}, func(opt *redis.ClusterOptions) { opt.ContextTimeoutEnabled = true })
}
