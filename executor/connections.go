package executor

// The executor's own connections. Its runtime commands run on a client of
// its own (runtimeClient) with a fixed pool, so the connections one worker
// opens do not grow with the application pool's size (10 per GOMAXPROCS by
// default) or with the number of partitions: at most ownConns on a single
// server (the fetcher's blocking and transaction connections, the control
// stream's blocking read, and two for everything else), plus lockConns for
// partition locks (lease.Client, whose socket deadlines follow the
// context). Only processors' fenced writes use the application's client.

import (
	"context"
	"errors"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"

	"github.com/leatdev/leat/internal/topology"
)

// Connection budget of one executor (see above).
const (
	ownConns  = 5 // blocking fetch, fenced-read transaction, control stream, 2 shared
	lockConns = 2 // lock refreshes, acquisitions and releases
)

// runtimeClient returns the client the executor runs its commands on, a
// copy of c's settings with a fixed pool, the same client as a
// *redis.Client when it has a single connection pool (standalone,
// Sentinel; nil otherwise: the fetcher then polls), and a function that
// closes it. Clients of other kinds are used as they are.
func runtimeClient(c redis.UniversalClient) (redis.UniversalClient, *redis.Client, func()) {
	off := &maintnotifications.Config{Mode: maintnotifications.ModeDisabled}
	switch c := c.(type) {
	case *redis.Client:
		own := ownClient(c)
		return own, own, func() { _ = own.Close() }
	case *redis.ClusterClient:
		opt := *c.Options()
		// The shared client may update its own notification settings while
		// connecting: give this client settings of its own (it needs none).
		opt.MaintNotificationsConfig = off
		opt.PoolSize, opt.MinIdleConns, opt.MaxIdleConns = ownConns, 0, ownConns
		cc := redis.NewClusterClient(&opt)
		topology.Attach(cc) // hooks are not options: follow failovers like c
		return cc, nil, func() { _ = cc.Close() }
	}
	return c, nil, func() {}
}

// blocker owns the connection the fetcher blocks on. Only clients with a
// single connection pool (standalone, Sentinel) have one; others poll.
type blocker struct {
	client *redis.Client
	conn   *redis.Conn
	cid    int64
}

func newBlocker(c *redis.Client) *blocker { return &blocker{client: c} }

// ownClient returns a client of ownConns connections to the server of c.
func ownClient(c *redis.Client) *redis.Client {
	opt := *c.Options()
	opt.MaintNotificationsConfig = &maintnotifications.Config{Mode: maintnotifications.ModeDisabled}
	opt.PoolSize = ownConns
	opt.MinIdleConns = 0
	opt.MaxIdleConns = ownConns
	return redis.NewClient(&opt)
}

func (b *blocker) ok() bool { return b.client != nil }

func (b *blocker) id(ctx context.Context) (int64, error) {
	if b.conn == nil {
		b.conn = b.client.Conn()
		b.cid = 0
	}
	if b.cid == 0 {
		id, err := b.conn.ClientID(ctx).Result()
		if err != nil {
			b.reset()
			return 0, err
		}
		b.cid = id
	}
	return b.cid, nil
}

// xread waits up to block for entries after last in any of keys and returns
// the keys that have some.
func (b *blocker) xread(ctx context.Context, keys, last []string, block time.Duration) ([]string, error) {
	res, err := b.conn.XRead(ctx, &redis.XReadArgs{Streams: append(keys, last...), Count: 1, Block: block}).Result()
	if errors.Is(err, redis.Nil) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	out := make([]string, 0, len(res))
	for _, s := range res {
		out = append(out, s.Stream)
	}
	return out, nil
}

// disable makes the fetcher poll from now on.
func (b *blocker) disable() {
	b.reset()
	b.client = nil
}

func (b *blocker) reset() {
	if b.conn != nil {
		_ = b.conn.Close()
		b.conn = nil
	}
	b.cid = 0
}

func (b *blocker) close() { b.reset() }

// txConn is the fetcher's own connection for fenced reads in a
// transaction (see fetch_tx.go).
type txConn struct {
	client *redis.Client
	conn   *redis.Conn
}

func newTxConn(c *redis.Client) *txConn { return &txConn{client: c} }

func (t *txConn) ok() bool { return t.client != nil }

func (t *txConn) get() *redis.Conn {
	if t.conn == nil {
		t.conn = t.client.Conn()
	}
	return t.conn
}

func (t *txConn) reset() {
	if t.conn != nil {
		_ = t.conn.Close()
		t.conn = nil
	}
}

func (t *txConn) close() { t.reset() }
