package redistest

import (
	"context"
	"fmt"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// Cluster is a Redis Cluster started for one test: masters, and optionally
// replicas that take over a killed master (see StartClusterReplicas, Kill and
// WaitFailover).
type Cluster struct {
	Addrs   []string // every node, masters first: seeds for a cluster client
	servers []*Server

	mu     sync.Mutex
	killed map[string]time.Time // address -> when Kill stopped it
}

// nodeTimeout is the cluster-node-timeout of every node: a master that does
// not answer for this long is failed, and one of its replicas promoted.
const nodeTimeout = 2 * time.Second

// StartCluster starts a Redis Cluster of n masters (no replicas) on free
// ports, with every slot assigned, and stops it when tb ends. It skips or
// fails tb like Start when redis-server or redis-cli is missing.
func StartCluster(tb testing.TB, n int) *Cluster {
	tb.Helper()
	return StartClusterReplicas(tb, n, 0)
}

// StartClusterReplicas starts a Redis Cluster of masters, each with
// replicasPerMaster replicas (cluster-node-timeout 2s), and returns once
// every node reports cluster_state:ok and every replica is in sync with its
// master. Every node also gets serverArgs, redis-server options such as
// "--cluster-require-full-coverage", "no". It stops the cluster when tb
// ends.
func StartClusterReplicas(tb testing.TB, masters, replicasPerMaster int, serverArgs ...string) *Cluster {
	tb.Helper()
	if masters < 3 {
		tb.Fatalf("redistest: a cluster needs at least 3 masters, not %d", masters)
	}
	if replicasPerMaster < 0 {
		tb.Fatalf("redistest: %d replicas per master", replicasPerMaster)
	}
	cli, err := exec.LookPath("redis-cli")
	if err != nil {
		unavailable(tb, fmt.Errorf("redis-cli not found in PATH"))
	}
	c := &Cluster{killed: map[string]time.Time{}}
	tb.Cleanup(c.stop)
	for range masters * (1 + replicasPerMaster) {
		// The bus port defaults to the port + 10000, which can be taken or
		// out of range for a free port: pick a free one too.
		bus, err := freePort()
		if err != nil {
			tb.Fatal(err)
		}
		args := append([]string{"--cluster-enabled", "yes",
			"--cluster-node-timeout", strconv.Itoa(int(nodeTimeout / time.Millisecond)),
			"--cluster-port", strconv.Itoa(bus)}, serverArgs...)
		s, err := startServerArgs(args...)
		if err != nil {
			unavailable(tb, err)
		}
		c.servers = append(c.servers, s)
		c.Addrs = append(c.Addrs, s.Addr)
	}
	// redis-cli makes the first masters nodes masters and gives each of
	// them replicasPerMaster of the others.
	args := append([]string{"--cluster", "create"}, c.Addrs...)
	args = append(args, "--cluster-replicas", strconv.Itoa(replicasPerMaster), "--cluster-yes")
	if out, err := exec.Command(cli, args...).CombinedOutput(); err != nil {
		tb.Fatalf("redis-cli --cluster create: %v\n%s", err, out)
	}
	deadline := time.Now().Add(30 * time.Second)
	for _, addr := range c.Addrs {
		waitNode(tb, addr, deadline, func(ctx context.Context, nc *redis.Client) (bool, string) {
			info, err := nc.ClusterInfo(ctx).Result()
			if err != nil || !strings.Contains(info, "cluster_state:ok") {
				return false, fmt.Sprintf("cluster state: %v %s", err, info)
			}
			role, err := nc.Do(ctx, "ROLE").Slice()
			if err != nil || len(role) == 0 {
				return false, fmt.Sprintf("role: %v", err)
			}
			switch role[0] {
			case "master":
				// Each master lists its replicas: all of them, in sync.
				if len(role) < 3 {
					return false, "master role reply too short"
				}
				reps, _ := role[2].([]any)
				return len(reps) == replicasPerMaster, fmt.Sprintf("%d of %d replicas attached", len(reps), replicasPerMaster)
			case "slave":
				repl, err := nc.Info(ctx, "replication").Result()
				ok := err == nil && strings.Contains(repl, "master_link_status:up") && strings.Contains(repl, "master_sync_in_progress:0")
				return ok, "replica not in sync: " + repl
			}
			return false, fmt.Sprintf("role %v", role[0])
		})
	}
	return c
}

// waitNode polls the node at addr until cond holds, failing tb at deadline
// with cond's last explanation.
func waitNode(tb testing.TB, addr string, deadline time.Time, cond func(context.Context, *redis.Client) (bool, string)) {
	tb.Helper()
	nc := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, DialTimeout: time.Second})
	defer nc.Close()
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		ok, why := cond(ctx, nc)
		cancel()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			tb.Fatalf("redistest: cluster node %s not ready: %s", addr, why)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Client returns a cluster client closed when tb ends.
func (c *Cluster) Client(tb testing.TB) *redis.ClusterClient {
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: c.Addrs})
	tb.Cleanup(func() { cc.Close() })
	return cc
}

// MasterOf returns the address of the master that serves key's slot now,
// as the node at any live address sees it.
func (c *Cluster) MasterOf(tb testing.TB, key string) string {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var lastErr error
	for _, addr := range c.live() {
		nc := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1})
		m, err := masterOf(ctx, nc, key)
		nc.Close()
		if err == nil {
			return m
		}
		lastErr = err
	}
	tb.Fatalf("redistest: master of %q: %v", key, lastErr)
	return ""
}

func masterOf(ctx context.Context, nc *redis.Client, key string) (string, error) {
	slot, err := nc.ClusterKeySlot(ctx, key).Result()
	if err != nil {
		return "", err
	}
	ranges, err := nc.ClusterSlots(ctx).Result()
	if err != nil {
		return "", err
	}
	for _, r := range ranges {
		if slot >= int64(r.Start) && slot <= int64(r.End) && len(r.Nodes) > 0 {
			return r.Nodes[0].Addr, nil
		}
	}
	return "", fmt.Errorf("slot %d is not served", slot)
}

// Masters returns the addresses of the nodes that are masters now, as the
// node at the first live address sees it, sorted.
func (c *Cluster) Masters(tb testing.TB) []string {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	nc := redis.NewClient(&redis.Options{Addr: c.live()[0], MaxRetries: -1})
	defer nc.Close()
	ranges, err := nc.ClusterSlots(ctx).Result()
	if err != nil {
		tb.Fatalf("redistest: cluster slots: %v", err)
	}
	var out []string
	for _, r := range ranges {
		if len(r.Nodes) > 0 && !slices.Contains(out, r.Nodes[0].Addr) {
			out = append(out, r.Nodes[0].Addr)
		}
	}
	slices.Sort(out)
	return out
}

// Kill kills the node at addr with SIGKILL, as a crash would, and returns
// the time it was killed.
func (c *Cluster) Kill(tb testing.TB, addr string) time.Time {
	tb.Helper()
	i := slices.Index(c.Addrs, addr)
	if i < 0 {
		tb.Fatalf("redistest: no cluster node at %s", addr)
	}
	c.servers[i].kill()
	at := time.Now()
	c.mu.Lock()
	c.killed[addr] = at
	c.mu.Unlock()
	return at
}

// Failover is what WaitFailover observed after a Kill.
type Failover struct {
	Killed   time.Time // when the master was killed
	Down     time.Time // when a live node first said cluster_state:fail (zero if none did)
	Up       time.Time // when a live node last said cluster_state:fail
	Promoted time.Time // when every live node saw the cluster whole without it
}

// Took returns the time from the kill to the promotion.
func (f Failover) Took() time.Duration { return f.Promoted.Sub(f.Killed) }

// DownFor returns how long some live node refused commands with
// CLUSTERDOWN (cluster_state:fail).
func (f Failover) DownFor() time.Duration {
	if f.Down.IsZero() {
		return 0
	}
	return f.Up.Sub(f.Down)
}

// WaitFailover waits, up to timeout, until a replica of the killed master at
// addr serves its slots and every live node reports cluster_state:ok and
// sees no slot on addr. It polls every node every 10ms and reports when
// the promotion was observed and when nodes said the cluster was down.
func (c *Cluster) WaitFailover(tb testing.TB, addr string, timeout time.Duration) Failover {
	tb.Helper()
	c.mu.Lock()
	at, ok := c.killed[addr]
	c.mu.Unlock()
	if !ok {
		tb.Fatalf("redistest: %s was not killed", addr)
	}
	f := Failover{Killed: at}
	clients := map[string]*redis.Client{}
	for _, node := range c.live() {
		clients[node] = redis.NewClient(&redis.Options{Addr: node, MaxRetries: -1, PoolSize: 1})
		defer clients[node].Close()
	}
	deadline := time.Now().Add(timeout)
	for {
		done := true
		var why string
		for node, nc := range clients {
			ok, down, w := promotedAt(nc, addr)
			if down {
				now := time.Now()
				if f.Down.IsZero() {
					f.Down = now
				}
				f.Up = now
			}
			if !ok && done {
				done, why = false, node+": "+w
			}
		}
		if done {
			f.Promoted = time.Now()
			return f
		}
		if time.Now().After(deadline) {
			tb.Fatalf("redistest: no failover of %s within %s: %s", addr, timeout, why)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// promotedAt reports whether the node of nc sees the cluster whole again
// without the master at dead, and whether it says the cluster is down.
func promotedAt(nc *redis.Client, dead string) (ok, down bool, why string) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	info, err := nc.ClusterInfo(ctx).Result()
	if err != nil || !strings.Contains(info, "cluster_state:ok") {
		return false, err == nil && strings.Contains(info, "cluster_state:fail"), fmt.Sprintf("cluster state: %v %s", err, info)
	}
	ranges, err := nc.ClusterSlots(ctx).Result()
	if err != nil {
		return false, false, err.Error()
	}
	covered := 0
	for _, r := range ranges {
		if len(r.Nodes) == 0 || r.Nodes[0].Addr == dead {
			return false, false, fmt.Sprintf("slots %d-%d still on %s", r.Start, r.End, dead)
		}
		covered += r.End - r.Start + 1
	}
	if covered != 16384 {
		return false, false, fmt.Sprintf("%d slots served", covered)
	}
	return true, false, ""
}

// live returns the addresses of the nodes not killed.
func (c *Cluster) live() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []string
	for _, a := range c.Addrs {
		if _, dead := c.killed[a]; !dead {
			out = append(out, a)
		}
	}
	return out
}

func (c *Cluster) stop() {
	for _, s := range c.servers {
		s.Stop()
	}
}
