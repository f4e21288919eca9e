package topology_test

import (
	"context"
	"testing"
	"time"

	"github.com/leatdev/leat/internal/tools/redistest"
	"github.com/leatdev/leat/internal/topology"
	"github.com/redis/go-redis/v9"
)

// The copies of a Sentinel client (their pooled connections, a connection
// held out of the pool, copies of copies) leave an old master that stays up
// and keeps its clients, once the sentinel names another: as the client
// copied does, rather than for as long as the old master keeps them.
func TestCopiesFollowTheMaster(t *testing.T) {
	if testing.Short() {
		t.Skip("sentinel test")
	}
	t.Parallel()
	sn := redistest.StartSentinelStubbornMaster(t)
	app := sn.Client(t)
	copied, closeCopy := topology.NewClient(app, func(opt *redis.Options) { opt.PoolSize = 2 })
	defer closeCopy()
	once, closeOnce := topology.SendOnce(copied, 1) // a copy of the copy
	defer closeOnce()
	held := copied.Conn()
	defer held.Close()
	for name, c := range map[string]interface {
		ConfigGet(context.Context, string) *redis.MapStringStringCmd
	}{"copy": copied, "copy of the copy": once.(*redis.Client), "held connection": held, "application client": app} {
		if got := redistest.ServerOf(c); got != sn.Master.Addr {
			t.Fatalf("%s on %s before the failover, want the master %s", name, got, sn.Master.Addr)
		}
	}

	sn.Failover(t)
	sn.WaitPromoted(t, 30*time.Second)
	redistest.Eventually(t, 10*time.Second, "the application client on the new master", func() bool {
		return redistest.ServerOf(app) == sn.Replica.Addr
	})
	for name, c := range map[string]interface {
		ConfigGet(context.Context, string) *redis.MapStringStringCmd
	}{"copy": copied, "copy of the copy": once.(*redis.Client)} {
		redistest.Eventually(t, 10*time.Second, name+" on the new master", func() bool { return redistest.ServerOf(c) == sn.Replica.Addr })
	}
	// A connection held out of the pool is closed under its holder: its
	// next command fails, and the next one it takes is to the new master.
	redistest.Eventually(t, 10*time.Second, "the held connection closed", func() bool { return redistest.ServerOf(held) != sn.Master.Addr })
	if got := redistest.ServerOf(held); got == sn.Replica.Addr {
		t.Fatalf("a closed connection reached %s", got)
	}
	again := copied.Conn()
	defer again.Close()
	if got := redistest.ServerOf(again); got != sn.Replica.Addr {
		t.Fatalf("a new connection of the copy reached %s, want the new master %s", got, sn.Replica.Addr)
	}
	// The old master is still up and still a master.
	old := redis.NewClient(&redis.Options{Addr: sn.Master.Addr})
	defer old.Close()
	if role, err := old.Do(context.Background(), "ROLE").Slice(); err != nil || role[0] != "master" {
		t.Fatalf("old master: role %v %v, want a master still", role, err)
	}
}
