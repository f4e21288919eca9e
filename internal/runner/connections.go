package runner

// The executor's own connections. Its runtime commands run on a client of
// its own (runtimeClient) with a fixed pool, so the connections one worker
// opens do not grow with the application pool's size (10 per GOMAXPROCS by
// default) or with the number of partitions: at most ownConns on a single
// server (the fetcher's, for all its reads in turn, the control stream's
// blocking read, and two for everything else), plus lockConns for partition
// locks (lease.Client, whose socket deadlines follow the context). Only
// processors' fenced writes use the application's client.
//
// The fetcher's connection comes from a client of its own that never
// retries a command (MaxRetries -1): go-redis sends a pipeline again when
// its reply breaks off, and a fenced read of new entries that ran once
// already would then take the next entries, leaving the first ones in this
// executor's pending list, unseen (see fetchState.recheck).

import (
	"context"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/leatdev/leat/internal/rdb"
	"github.com/leatdev/leat/internal/topology"
)

// Connection budget of one executor (see above).
const (
	ownConns   = 4 // the fetcher's (blocking reads, fenced reads), control stream, 2 shared
	fetchConns = 1 // of ownConns: the fetcher's, on a client of its own
	lockConns  = 2 // lock refreshes, acquisitions and releases
)

// runtimeClient returns the client the executor runs its commands on, a
// copy of c's settings with a fixed pool, the same client as a
// *redis.Client when it has a single connection pool (standalone,
// Sentinel; nil otherwise: the fetcher then polls), and a function that
// closes it. Clients of other kinds are used as they are.
func runtimeClient(c redis.UniversalClient) (redis.UniversalClient, *redis.Client, func()) {
	switch c.(type) {
	case *redis.Client:
		// the fetcher has the rest of ownConns (newFetchConn)
		own, closeOwn := topology.Pool(c, ownConns-fetchConns)
		return own, own.(*redis.Client), closeOwn
	case *redis.ClusterClient:
		cc, closeCC := topology.Pool(c, ownConns)
		return cc, nil, closeCC
	}
	return c, nil, func() {}
}

// fetchConn is the fetcher's own connection. Its blocking reads and its
// fenced reads in a transaction (fetch_tx.go) take turns on it: both are
// the fetcher goroutine's, which never runs one during the other. Only
// clients with a single connection pool (standalone, Sentinel) have one.
//
// A CLIENT UNBLOCK sent late, once the blocking read it meant had ended,
// finds the connection idle or in a transaction, where nothing blocks: it
// has no effect there, and at worst ends the next blocking read early, as
// on a connection of its own.
type fetchConn struct {
	client      *redis.Client // fetchConns connections, no retries; nil without one
	closeClient func()
	conn        *redis.Conn
	cid         int64 // CLIENT ID of conn; 0 until asked
}

// newFetchConn returns the fetcher's connection to the server of own (nil:
// none, on Cluster).
func newFetchConn(own *redis.Client) *fetchConn {
	if own == nil {
		return &fetchConn{}
	}
	// A read whose reply broke off is never sent again.
	c, closeClient := topology.SendOnce(own, fetchConns)
	return &fetchConn{client: c.(*redis.Client), closeClient: closeClient}
}

// ok reports whether there is a connection of the fetcher's own.
func (c *fetchConn) ok() bool { return c.client != nil }

func (c *fetchConn) get() *redis.Conn {
	if c.conn == nil {
		c.conn = c.client.Conn()
		c.cid = 0
	}
	return c.conn
}

// reset closes the connection: the next use opens another.
func (c *fetchConn) reset() {
	if c.conn != nil {
		_ = c.conn.Close()
		c.conn = nil
	}
	c.cid = 0
}

// close closes the connection and its client.
func (c *fetchConn) close() {
	c.reset()
	if c.client != nil {
		c.closeClient()
	}
}

// blocker makes the fetcher's blocking reads on its connection; once
// disabled, the fetcher polls instead.
type blocker struct {
	c    *fetchConn
	off  bool
	read rdb.BlockingRead
}

func newBlocker(c *fetchConn) *blocker { return &blocker{c: c} }

func (b *blocker) ok() bool { return b.c.ok() && !b.off }

func (b *blocker) id(ctx context.Context) (int64, error) {
	conn := b.c.get()
	if b.c.cid == 0 {
		id, err := rdb.ClientID(ctx, conn)
		if err != nil {
			b.reset()
			return 0, err
		}
		b.c.cid = id
	}
	return b.c.cid, nil
}

// xread waits up to block for entries after last in any of keys (strings)
// and calls got with the index in keys of each that has some
// (rdb.BlockingRead). Its socket deadline is the client's ReadTimeout, not
// one stretched for the block (go-redis does that for its own blocking
// commands only), so the block is at most half of it.
//
// then, when not nil, queues a command right behind the blocking read on
// the same connection, in the same write: Redis runs it as soon as the
// blocking read returns, and its reply comes with the blocking read's (the
// fetcher's fenced read of the idle partitions, fetch_idle.lua).
func (b *blocker) xread(ctx context.Context, keys, last []any, block time.Duration, got func(i int), then func(p rdb.Processor)) error {
	conn := b.c.get()
	if rt := b.c.client.Options().ReadTimeout; rt > 0 {
		block = max(min(block, rt/2), time.Millisecond)
	}
	return b.read.Wait(ctx, conn, keys, last, block, got, then)
}

// disable makes the fetcher poll from now on.
func (b *blocker) disable() {
	b.reset()
	b.off = true
}

func (b *blocker) reset() { b.c.reset() }
