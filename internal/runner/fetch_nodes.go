package runner

import (
	"context"
	"log/slog"
	"time"

	"github.com/leatdev/leat/internal/rdb"
	"github.com/leatdev/leat/internal/topology"
	"github.com/redis/go-redis/v9"
)

// Per-node isolation of fetch failures on Redis Cluster, the fetcher's
// Cluster mode (every read there is scripted: fetch_script.go). The
// partitions of an executor live on several masters, and the fetcher reads
// them all in one pipeline (go-redis sends one round trip to each master,
// in parallel).
// When a master dies, the reads of its partitions fail (connection refused,
// then CLUSTERDOWN until a replica took over, or MOVED) while the others
// succeed. The partitions whose read failed are handed to a probe of their
// node, and the next rounds read the other partitions without waiting:
//
//	round:  read every partition not probing -> deliver what was read;
//	        failed partitions -> probe of their node (by the slot map now)
//	probe:  wait (probeMin doubling to probeMax, by the failures in a row),
//	        EXISTS each partition's lock key through the cluster client;
//	        partitions whose node answered -> back into the rounds
//
// The rounds on Cluster use a client of their own (roundClient), so that a
// dead node fails its reads at once. A probe is one goroutine per failing
// node, owned by the fetcher, so a node that hangs holds up its own
// partitions only, and its backoff never delays the rounds of healthy
// nodes. A partition stays assigned to this executor while it is probed:
// its lock and trust are the lock refresher's (lock.go). What it costs: an
// EXISTS per waiting partition per probe. Standalone and Sentinel clients
// have a single node: a failed round backs off as a whole (fetcher.run).

// probe is the partitions of one failing node, guarded by fetcher.mu.
type probe struct {
	states []*fetchState
}

const (
	probeMin = 50 * time.Millisecond
	probeMax = 250 * time.Millisecond
)

// roundClient returns the cluster client of the fetcher's reads on Cluster,
// and a function that closes it: a copy of the app's client's settings that
// gives up on an unreachable node at once (one dial, no redirect) instead
// of retrying its dial as go-redis does by default, which would hold every
// partition's read of the round, not only the dead node's. Its slot map is reloaded on failover errors like the
// app's (topology.Attach). Other clients are returned as they are.
func roundClient(c redis.UniversalClient) (redis.UniversalClient, func()) {
	cc, ok := c.(*redis.ClusterClient)
	if !ok {
		return c, func() {}
	}
	opt := topology.OwnCluster(*cc.Options())
	opt.DialerRetries = 1
	// Nothing is sent twice: neither a redirected command (the topology
	// hook reloads the slot map, the next round goes to the new master) nor
	// one whose reply broke off (a fenced read that ran would take the next
	// entries: see fetchState.recheck).
	opt.MaxRedirects, opt.MaxRetries = -1, -1
	opt.PoolSize, opt.MinIdleConns, opt.MaxIdleConns = 2, 0, 2
	rc := redis.NewClusterClient(opt)
	topology.Attach(rc)
	return rc, func() { _ = rc.Close() }
}

// perNode reports whether the executor reads a Redis Cluster, whose failed
// reads are isolated by node.
func (f *fetcher) perNode() bool {
	_, ok := f.e.client.(*redis.ClusterClient)
	return ok
}

// isolate hands the partitions of failed reads to the probes of their
// nodes, starting a probe for a node that has none.
func (f *fetcher) isolate(ctx context.Context, failed []fetchWork, err error) {
	cc := f.rounds.(*redis.ClusterClient)
	byNode := map[string][]*fetchState{}
	for _, w := range failed {
		addr := "unknown"
		if m, merr := cc.MasterForKey(ctx, w.s.p.key); merr == nil {
			addr = m.Options().Addr
		}
		byNode[addr] = append(byNode[addr], w.s)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for addr, states := range byNode {
		again := false // a failure in a row: said already
		for _, s := range states {
			s.probing = true
			s.failures++
			again = again || s.failures > 1
		}
		if pr := f.probes[addr]; pr != nil {
			pr.states = append(pr.states, states...)
			continue
		}
		pr := &probe{states: states}
		f.probes[addr] = pr
		level := slog.LevelWarn
		if again {
			level = slog.LevelDebug
		}
		f.log.Log(ctx, level, "fetch failed on a cluster node: its partitions wait for it, the others go on",
			"node", addr, "partitions", len(states), "error", err)
		f.probeWG.Add(1)
		go func() {
			defer f.probeWG.Done()
			f.runProbe(ctx, cc, addr, pr)
		}()
	}
}

// runProbe waits until the partitions of pr can be read again, and gives
// them back to the fetcher's rounds.
func (f *fetcher) runProbe(ctx context.Context, cc *redis.ClusterClient, addr string, pr *probe) {
	defer func() {
		f.mu.Lock()
		for _, s := range pr.states {
			s.probing = false
		}
		pr.states = nil
		delete(f.probes, addr)
		f.mu.Unlock()
		f.notify()
	}()
	for {
		f.mu.Lock()
		worst := 0
		live := pr.states[:0]
		for _, s := range pr.states {
			if f.parts[s.p.n] != s {
				continue // removed meanwhile
			}
			live = append(live, s)
			worst = max(worst, s.failures)
		}
		pr.states = live
		keys := make([]string, len(live))
		for i, s := range live {
			keys[i] = s.p.lockKey
		}
		f.mu.Unlock()
		if len(keys) == 0 {
			return
		}
		sleepCtx(ctx, min(probeMin<<min(worst-1, 5), probeMax))
		if ctx.Err() != nil {
			return
		}
		errs := rdb.Probe(ctx, cc, keys)
		f.mu.Lock()
		back := false
		still := pr.states[:0]
		for i, s := range pr.states {
			if i < len(errs) && errs[i] == nil {
				s.probing = false // read by the next round
				back = true
				continue
			}
			if i < len(errs) {
				s.failures++
			}
			still = append(still, s)
		}
		pr.states = still
		f.mu.Unlock()
		if back {
			f.notify()
		}
	}
}
