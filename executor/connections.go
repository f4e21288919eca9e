package executor

// The executor's own connections. Long blocking reads (the control stream,
// idle partitions) and the fetcher's transactions run on a small client of
// the executor's own (ownClient), so they never hold connections of the
// application's pool; lock commands run on another (lease.Client), whose
// socket deadlines follow the context.

import (
	"context"
	"errors"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"
)

// blocker owns the connection the fetcher blocks on. Only clients with a
// single connection pool (standalone, Sentinel) have one; others poll.
type blocker struct {
	client *redis.Client
	conn   *redis.Conn
	cid    int64
}

func newBlocker(c *redis.Client) *blocker { return &blocker{client: c} }

// ownClient returns a client with three connections to the server of c,
// when c is a single-pool client (standalone or Sentinel); nil otherwise.
// The executor's long blocking reads (control stream, idle partitions) and
// the fetcher's transactions use it, so they never hold connections of the
// application's pool.
func ownClient(c redis.UniversalClient) *redis.Client {
	rc, ok := c.(*redis.Client)
	if !ok {
		return nil
	}
	opt := *rc.Options()
	// The shared client may update its own notification settings while
	// connecting: give this client settings of its own (it needs none).
	opt.MaintNotificationsConfig = &maintnotifications.Config{Mode: maintnotifications.ModeDisabled}
	opt.PoolSize = 3
	opt.MinIdleConns = 0
	opt.MaxIdleConns = 3
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
