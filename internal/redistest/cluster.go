package redistest

import (
	"context"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// Cluster is a Redis Cluster of masters started for one test.
type Cluster struct {
	Addrs   []string
	servers []*Server
}

// StartCluster starts a Redis Cluster of n masters (no replicas) on free
// ports, with every slot assigned, and stops it when tb ends. It skips or
// fails tb like Start when redis-server or redis-cli is missing.
func StartCluster(tb testing.TB, n int) *Cluster {
	tb.Helper()
	cli, err := exec.LookPath("redis-cli")
	if err != nil {
		unavailable(tb, fmt.Errorf("redis-cli not found in PATH"))
	}
	c := &Cluster{}
	tb.Cleanup(c.stop)
	for range n {
		// The bus port defaults to the port + 10000, which can be taken or
		// out of range for a free port: pick a free one too.
		bus, err := freePort()
		if err != nil {
			tb.Fatal(err)
		}
		s, err := startServerArgs("--cluster-enabled", "yes", "--cluster-node-timeout", "2000",
			"--cluster-port", strconv.Itoa(bus))
		if err != nil {
			unavailable(tb, err)
		}
		c.servers = append(c.servers, s)
		c.Addrs = append(c.Addrs, s.Addr)
	}
	args := append([]string{"--cluster", "create"}, c.Addrs...)
	args = append(args, "--cluster-replicas", "0", "--cluster-yes")
	if out, err := exec.Command(cli, args...).CombinedOutput(); err != nil {
		tb.Fatalf("redis-cli --cluster create: %v\n%s", err, out)
	}
	// Wait until every node sees every slot served.
	deadline := time.Now().Add(20 * time.Second)
	for _, addr := range c.Addrs {
		nc := redis.NewClient(&redis.Options{Addr: addr})
		for {
			info, err := nc.ClusterInfo(context.Background()).Result()
			if err == nil && strings.Contains(info, "cluster_state:ok") {
				break
			}
			if time.Now().After(deadline) {
				nc.Close()
				tb.Fatalf("cluster node %s not ready: %v %s", addr, err, info)
			}
			time.Sleep(50 * time.Millisecond)
		}
		nc.Close()
	}
	return c
}

// Client returns a cluster client closed when tb ends.
func (c *Cluster) Client(tb testing.TB) *redis.ClusterClient {
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: c.Addrs})
	tb.Cleanup(func() { cc.Close() })
	return cc
}

func (c *Cluster) stop() {
	for _, s := range c.servers {
		s.Stop()
	}
}
