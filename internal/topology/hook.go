package topology

import (
	"context"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
	"weak"

	"github.com/redis/go-redis/v9"
)

// ReloadEvery is the least time between two reloads the hook asks for.
const ReloadEvery = 100 * time.Millisecond

// attached holds the cluster clients that have the hook, so that two Apps
// sharing a client add it once. The keys do not keep clients alive.
var attached sync.Map // weak.Pointer[redis.ClusterClient] -> struct{}

// Attach adds to c, when it is a *redis.ClusterClient, a hook that reloads
// its slot map (ClusterClient.ReloadState) when a command or a pipeline
// fails with an error that says the map is stale (see Stale), at most once
// per ReloadEvery. Other clients are left as they are; attaching twice adds
// one hook. go-redis does not synchronise adding a hook with commands in
// flight: attach before the client is used from other goroutines.
func Attach(c redis.UniversalClient) {
	cc, ok := c.(*redis.ClusterClient)
	if !ok || cc == nil {
		return
	}
	key := weak.Make(cc)
	if _, loaded := attached.LoadOrStore(key, struct{}{}); loaded {
		return
	}
	runtime.AddCleanup(cc, func(k weak.Pointer[redis.ClusterClient]) { attached.Delete(k) }, key)
	cc.AddHook(&reloadHook{client: key})
}

// Reload asks c, when it is a cluster client, to reload its slot map, at
// most once per ReloadEvery (shared with the hook of Attach when c has it).
func Reload(c redis.UniversalClient) {
	if cc, ok := c.(*redis.ClusterClient); ok && cc != nil {
		reload(cc)
	}
}

var lastReload sync.Map // weak.Pointer[redis.ClusterClient] -> *atomic.Int64 (unix ns)

func reload(cc *redis.ClusterClient) {
	key := weak.Make(cc)
	v, loaded := lastReload.Load(key)
	if !loaded {
		v, loaded = lastReload.LoadOrStore(key, new(atomic.Int64))
		if !loaded {
			runtime.AddCleanup(cc, func(k weak.Pointer[redis.ClusterClient]) { lastReload.Delete(k) }, key)
		}
	}
	last := v.(*atomic.Int64)
	now := time.Now().UnixNano()
	prev := last.Load()
	if now-prev < int64(ReloadEvery) || !last.CompareAndSwap(prev, now) {
		return
	}
	// Asynchronous: go-redis reloads in a goroutine of its own.
	cc.ReloadState(context.Background())
}

type reloadHook struct {
	client weak.Pointer[redis.ClusterClient]
}

func (h *reloadHook) seen(err error) {
	if Stale(err) {
		if cc := h.client.Value(); cc != nil {
			reload(cc)
		}
	}
}

func (h *reloadHook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *reloadHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		h.seen(err)
		return err
	}
}

func (h *reloadHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		err := next(ctx, cmds)
		if Stale(err) {
			h.seen(err)
			return err
		}
		for _, cmd := range cmds {
			if e := cmd.Err(); Stale(e) {
				h.seen(e)
				break
			}
		}
		return err
	}
}
