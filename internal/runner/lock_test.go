package runner

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/leatdev/leat/executor"
	"github.com/leatdev/leat/internal/core"
	"github.com/leatdev/leat/internal/rdb"
	"github.com/leatdev/leat/internal/tools/redistest"
	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"
)

// TestAcquireAfterLostReply: when the reply of a lock acquisition that ran
// is lost (the connection breaks after Redis took the lock), the next try
// finds the lock holding its own value and takes it at once, instead of
// seeing it held and waiting for it to expire (LockExpiry is long here, and
// the fallback retry after LockExpiry/4 is longer than the test's wait).
func TestAcquireAfterLostReply(t *testing.T) {
	t.Parallel()
	base, prefix := redistest.Client(t)
	ks := rdb.NewKeySpace(prefix, "app")
	lose := &redistest.ReplyLoser{Match: []byte(ks.Lock("s", "p", 0))}
	c := lose.Client(t, base)
	st, err := core.Open(core.NewCatalog(c, ks, core.Defaults{}, nil),
		core.Definition{Name: "s", Partitions: 1, KeyField: "k", Size: 1000, Codec: "msgpack"})
	if err != nil {
		t.Fatal(err)
	}
	r := &rig{t: t, client: c, keys: ks, st: st}
	e := r.executor("p", executor.Options{LockExpiry: 60 * time.Second}, drainAll)
	// Every reply to the executor's first try is lost, go-redis's own
	// retries of it included (they send the same value).
	lose.Armed = func() bool { return e.stats.attempts.Load() == 0 }
	r.run(e)
	owns(t, e, 0)
	if n := lose.Lost(); n == 0 {
		t.Fatal("no acquisition reply lost")
	}
	if n := e.stats.attempts.Load(); n != 2 {
		t.Errorf("%d tries, want 2: the one whose replies were lost, and one that takes the lock again", n)
	}
	if n := e.stats.busy.Load(); n != 0 {
		t.Errorf("%d tries found the lock held after the lost reply (by the acquisition itself)", n)
	}
	r.send(0, 3)
	redistest.Eventually(t, 10*time.Second, "the partition's events processed", func() bool {
		gs, err := c.XInfoGroups(context.Background(), ks.Partition("s", 0)).Result()
		return err == nil && len(gs) == 1 && gs[0].EntriesRead == 3 && gs[0].Pending == 0
	})
}

// TestReleaseAfterLostReplies: on Redis Cluster, a release whose replies are
// lost (the first ran: the lock is gone; the replies to it and to go-redis's
// own retries never come back, as in a failover) is tried again until a try
// answers; the lock found gone then counts as released by the earlier try,
// so the release is announced and the next owner takes the partition on the
// notice rather than when the lock would have expired.
func TestReleaseAfterLostReplies(t *testing.T) {
	if testing.Short() {
		t.Skip("cluster test")
	}
	t.Parallel()
	cl := redistest.StartCluster(t, 3)
	src, err := os.ReadFile("../rdb/lock_release.lua")
	if err != nil {
		t.Fatal(err)
	}
	sum := sha1.Sum(src)
	if err := cl.Client(t).ScriptLoad(context.Background(), string(src)).Err(); err != nil { // on every master: EVALSHA answers
		t.Fatal(err)
	}
	var on atomic.Bool
	lose := &redistest.ReplyLoser{Match: []byte(hex.EncodeToString(sum[:]))}
	lose.Armed = func() bool { return on.Load() && lose.Lost() < 6 }
	opt := *cl.Client(t).Options()
	opt.Dialer = lose.Dial
	opt.MaintNotificationsConfig = &maintnotifications.Config{Mode: maintnotifications.ModeDisabled}
	c := redis.NewClusterClient(&opt)
	t.Cleanup(func() { _ = c.Close() })
	r := rigOn(t, c, redistest.Prefix(t), 1, 1000)
	opts := executor.Options{LockExpiry: 60 * time.Second}
	a := r.executor("p", opts, drainAll)
	stopA := r.run(a)
	owns(t, a, 0)
	b := r.executor("p", opts, drainAll)
	r.run(b)
	on.Store(true)
	if err := stopA(); err != nil {
		t.Fatal(err)
	}
	if n := lose.Lost(); n == 0 {
		t.Fatal("no release reply lost")
	}
	if n := a.stats.released.Load(); n != 1 {
		t.Fatalf("%d releases counted, want 1 (the try whose reply was lost)", n)
	}
	owns(t, b, 0)
}
