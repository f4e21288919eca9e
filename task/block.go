package task

import (
	"context"
	"errors"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
	"weak"

	"github.com/leatdev/leat/app"
	"github.com/leatdev/leat/internal/topology"
	"github.com/redis/go-redis/v9"
)

// A fetcher with nothing ready waits in a blocking read of the queue's
// ready streams. The read is never cancelled by its context (a read cut
// short could leave entries read but not marked), so a stopping worker
// waits for it to end. On a single server (standalone or Sentinel) each
// fetcher keeps a connection of its own, whose CLIENT ID it knows, and a
// stop ends the read with CLIENT UNBLOCK (which ends it as a timeout would:
// nothing read): the read can then wait idleBlock. Where that cannot be
// done (Redis Cluster, whose client keeps no connection apart; a Redis user
// that may not run CLIENT ID or CLIENT UNBLOCK; a proxy that does not know
// them) the read waits readBlock, so that a stop waits at most that long.

// idleBlock bounds a blocking read that a stop interrupts.
const idleBlock = 5 * time.Second

// unblockAgain is how often a stop sends CLIENT UNBLOCK again while the
// read it meant has not ended (the first may have reached the server before
// the read did).
const unblockAgain = 50 * time.Millisecond

// blockConn is a fetcher's connection for interruptible blocking reads.
type blockConn struct {
	conn *redis.Conn
	id   int64 // CLIENT ID of conn; 0 until asked
}

// reset closes the connection: the next read takes another.
func (b *blockConn) reset() {
	if b.conn != nil {
		_ = b.conn.Close()
		b.conn = nil
	}
	b.id = 0
}

// interrupts says whether the worker's blocking reads can be interrupted;
// it is false from the first failure of CLIENT ID or CLIENT UNBLOCK on.
type interrupts struct {
	client *redis.Client // the blocking reads' client; nil on Cluster
	off    atomic.Bool
}

// newInterrupts finds out whether blocking reads on blk can be
// interrupted: blk is a single-server client and the Redis user may run
// CLIENT UNBLOCK (of client 0, which does not exist: the answer is 0).
func (w *worker) newInterrupts(ctx context.Context, blk redis.UniversalClient) *interrupts {
	c, ok := blk.(*redis.Client)
	if !ok {
		return &interrupts{}
	}
	it := &interrupts{client: c}
	if err := w.q.rdb.ClientUnblock(ctx, 0).Err(); refused(err) {
		w.noInterrupts(it, "CLIENT UNBLOCK", err)
	}
	return it
}

// refused reports whether err is the server refusing a command for good
// (topology.Denied, topology.Unsupported). Other errors (a connection lost,
// a server restarting) pass.
func refused(err error) bool { return topology.Denied(err) || topology.Unsupported(err) }

// noInterruptsSaid holds the Apps whose logs said that blocking reads
// cannot be interrupted. The keys do not keep Apps alive.
var noInterruptsSaid sync.Map // weak.Pointer[app.App] -> struct{}

// noInterrupts turns interruptible reads off, saying why once per App: a
// warning when the Redis user may not run command (what to grant), else a
// note.
func (w *worker) noInterrupts(it *interrupts, command string, err error) {
	if it.off.Swap(true) {
		return
	}
	cost := "a blocking read every 500ms instead of every 5s while a queue is idle"
	if _, said := noInterruptsSaid.LoadOrStore(weak.Make(w.q.app), struct{}{}); said {
		return // once per App, whatever its queues
	}
	runtime.AddCleanup(w.q.app, func(k weak.Pointer[app.App]) { noInterruptsSaid.Delete(k) }, weak.Make(w.q.app))
	if topology.Denied(err) {
		w.q.log.Warn("the Redis user may not run a command that interrupts blocking reads",
			"command", command, "cost", cost, "grant", topology.Grant(command), "error", err)
		return
	}
	w.q.log.Info("the server cannot interrupt blocking reads", "command", command, "cost", cost, "error", err)
}

// blockingRead reads new entries of streams for the fetcher of b, waiting
// while there are none: up to idleBlock when a stop (ctx) can interrupt it,
// else readBlock.
func (w *worker) blockingRead(ctx context.Context, b *blockConn, args *redis.XReadGroupArgs) ([]redis.XStream, error) {
	it := w.interrupts
	if it.client == nil || it.off.Load() {
		b.reset()
		args.Block = readBlock
		return w.blk.XReadGroup(context.WithoutCancel(ctx), args).Result()
	}
	if b.conn == nil {
		b.conn = it.client.Conn()
	}
	if b.id == 0 {
		id, err := b.conn.ClientID(ctx).Result()
		if err != nil {
			b.reset()
			if !refused(err) {
				return nil, err
			}
			w.noInterrupts(it, "CLIENT ID", err)
			return nil, redis.Nil // read nothing: the next read blocks for readBlock
		}
		b.id = id
	}
	args.Block = idleBlock
	read := make(chan struct{})
	unblocked := make(chan struct{})
	stop := context.AfterFunc(ctx, func() {
		defer close(unblocked)
		for {
			uctx, cancel := context.WithTimeout(context.Background(), time.Second)
			_ = w.q.rdb.ClientUnblock(uctx, b.id).Err()
			cancel()
			select {
			case <-read:
				return
			case <-time.After(unblockAgain):
			}
		}
	})
	res, err := b.conn.XReadGroup(context.WithoutCancel(ctx), args).Result()
	close(read)
	if !stop() {
		<-unblocked // it ran: wait for it to end
	}
	if err != nil && !errors.Is(err, redis.Nil) {
		b.reset()
	}
	return res, err
}
