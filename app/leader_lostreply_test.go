package app_test

import (
	"testing"
	"time"

	"github.com/leatdev/leat/app"
	"github.com/leatdev/leat/internal/rdb"
	"github.com/leatdev/leat/internal/tools/redistest"
)

// A campaign whose try took the leader lease but lost every reply (the
// connection broke on the way back, go-redis's own retries included) tries
// again with the same lock value, and takes the lease again at once rather
// than waiting for it to expire: the worker leads after the next try,
// LeaderLease/10 later, not after LeaderLease.
func TestLeaderAfterLostReply(t *testing.T) {
	t.Parallel()
	env := newEnv(t)
	const lease = 30 * time.Second
	lose := &redistest.ReplyLoser{Match: []byte(rdb.NewKeySpace(env.prefix, "shop").Leader())}
	lose.Armed = func() bool { return lose.Lost() < 4 } // the first try and go-redis's 3 retries of it
	a, _ := env.newApp(1, func(c *app.Config) {
		c.Client = lose.Client(t, env.client)
		c.LeaderLease = lease
	})
	start := time.Now()
	startWorker(t, a)
	redistest.Eventually(t, lease/3, "the worker leads", a.IsLeader)
	if lose.Lost() == 0 {
		t.Fatal("no reply to a leader lease try was lost")
	}
	t.Logf("leader %s after the start, %d replies lost", time.Since(start).Round(time.Millisecond), lose.Lost())
}
