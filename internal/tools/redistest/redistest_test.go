package redistest_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/leatdev/leat/internal/tools/redistest"
	"github.com/redis/go-redis/v9"
)

func TestMain(m *testing.M) { redistest.Main(m) }

func TestClientsGetTheirOwnPrefix(t *testing.T) {
	t.Parallel()
	c1, p1 := redistest.Client(t)
	_, p2 := redistest.Client(t)
	if p1 == p2 || strings.ContainsAny(p1, "{}: /") {
		t.Fatalf("prefixes %q and %q", p1, p2)
	}
	if err := c1.Set(context.Background(), p1+":k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
}

func TestPrivateServerRestart(t *testing.T) {
	t.Parallel()
	s := redistest.Start(t)
	c := s.Client(t)
	ctx := context.Background()
	if err := c.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	s.Restart(t)
	// Data does not survive: the server runs without persistence.
	if n := c.Exists(ctx, "k").Val(); n != 0 {
		t.Fatalf("key survived the restart")
	}
}

// A cluster with replicas survives the loss of a master: a replica takes
// its slots over, and WaitFailover says when.
func TestClusterFailover(t *testing.T) {
	if testing.Short() {
		t.Skip("cluster test")
	}
	t.Parallel()
	cl := redistest.StartClusterReplicas(t, 3, 1)
	masters := cl.Masters(t)
	if len(masters) != 3 || len(cl.Addrs) != 6 {
		t.Fatalf("masters %v of nodes %v", masters, cl.Addrs)
	}
	ctx := context.Background()
	victim := cl.MasterOf(t, "k")
	// WAIT counts the replicas that have this connection's writes, so the
	// write and the WAIT go over one connection to k's master: then the
	// replica has the write before its master dies.
	vc := redis.NewClient(&redis.Options{Addr: victim})
	defer vc.Close()
	conn := vc.Conn()
	defer conn.Close()
	if err := conn.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if n, err := conn.Do(ctx, "WAIT", 1, 5000).Int(); err != nil || n != 1 {
		t.Fatalf("WAIT: %d %v", n, err)
	}
	cl.Kill(t, victim)
	f := cl.WaitFailover(t, victim, 30*time.Second)
	t.Logf("replica promoted %s after the kill; cluster down for %s", f.Took(), f.DownFor())
	if f.Took() <= 0 || f.DownFor() > f.Took() {
		t.Fatalf("failover %+v", f)
	}
	now := cl.MasterOf(t, "k")
	if now == victim || !slices.Contains(cl.Addrs, now) {
		t.Fatalf("key k served by %s after the failover of %s", now, victim)
	}
	nc := redis.NewClient(&redis.Options{Addr: now})
	defer nc.Close()
	if v, err := nc.Get(ctx, "k").Result(); err != nil || v != "v" {
		t.Fatalf("k on the promoted replica: %q %v", v, err)
	}
}
