package executor

import (
	"bytes"
	"context"
	"io"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/leatdev/leat/internal/core"
	"github.com/leatdev/leat/internal/keys"
	"github.com/leatdev/leat/internal/redistest"
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
	ks := keys.New(prefix, "app")
	lose := &replyLoser{match: []byte(ks.Lock("s", "p", 0))}
	opt := *base.Options()
	opt.Dialer = lose.dial
	opt.MaintNotificationsConfig = &maintnotifications.Config{Mode: maintnotifications.ModeDisabled}
	c := redis.NewClient(&opt)
	t.Cleanup(func() { _ = c.Close() })
	st, err := core.Open(core.NewCatalog(c, ks, core.Defaults{}, nil),
		core.Definition{Name: "s", Partitions: 1, KeyField: "k", Size: 1000, Codec: "msgpack"})
	if err != nil {
		t.Fatal(err)
	}
	r := &rig{t: t, client: c, keys: ks, st: st}
	e := r.executor("p", Options{LockExpiry: 60 * time.Second}, drainAll)
	// Every reply to the executor's first try is lost, go-redis's own
	// retries of it included (they send the same value).
	lose.armed = func() bool { return e.stats.attempts.Load() == 0 }
	r.run(e)
	owns(t, e, 0)
	if n := lose.lost.Load(); n == 0 {
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

// replyLoser dials connections that, while armed says so, let each command
// whose bytes contain match reach Redis and be answered, then drop the
// reply and break the connection, as a crash or a reset on the way back
// would; lost counts the dropped replies.
type replyLoser struct {
	match  []byte
	armed  func() bool
	lost   atomic.Int32
	dialer net.Dialer
}

func (l *replyLoser) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	c, err := l.dialer.DialContext(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	return &losingConn{Conn: c, l: l}, nil
}

type losingConn struct {
	net.Conn
	l    *replyLoser
	drop bool // the reply to the last write is to be dropped
}

func (c *losingConn) Write(b []byte) (int, error) {
	if bytes.Contains(b, c.l.match) && c.l.armed() {
		c.drop = true
	}
	return c.Conn.Write(b)
}

func (c *losingConn) Read(b []byte) (int, error) {
	if !c.drop {
		return c.Conn.Read(b)
	}
	// The reply arrives, so the command ran; the caller never sees it. An
	// error reply (NOSCRIPT: the EVAL that follows runs the script) goes
	// through.
	n, err := c.Conn.Read(b)
	c.drop = false
	if err == nil && n > 0 && b[0] == '-' {
		return n, nil
	}
	_ = c.Conn.Close()
	if err == nil {
		c.l.lost.Add(1)
		err = io.ErrUnexpectedEOF
	}
	return 0, err
}
