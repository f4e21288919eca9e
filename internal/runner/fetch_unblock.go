package runner

import (
	"context"
	"time"

	"github.com/leatdev/leat/internal/rdb"
	"github.com/leatdev/leat/internal/topology"
)

// Interrupting the blocking read. A consumer that drains its buffer below
// the watermark, or a new partition, wakes the fetcher (notify); while the
// fetcher waits in the blocking XREAD of the idle read, the unblocker ends
// that read with CLIENT UNBLOCK, so the woken partition is read at once
// rather than after ReadBlock.
//
// A Redis user that may not run CLIENT UNBLOCK (the common ACL
// "+@all -@dangerous"; probed before the first blocking read, logged once)
// would leave a full partition waiting for the blocking read to time out
// each time its buffer drains. The fetcher then blocks only while every
// buffer has room (no consumer will wake it), for at most
// maxUninterruptible, and polls the idle partitions while some consumer
// works through a fuller buffer: a read of each idle partition per poll
// instead of one blocking read. A server without CLIENT ID or UNBLOCK is
// polled the same way.

// maxUninterruptible bounds a blocking read that CLIENT UNBLOCK cannot end,
// so that a new partition or a shutdown waits at most this long.
const maxUninterruptible = 250 * time.Millisecond

// probeUnblock finds out, before the first blocking read, whether the Redis
// user may run CLIENT UNBLOCK (of client 0, which does not exist: the
// answer is 0, or NOPERM).
func (f *fetcher) probeUnblock(ctx context.Context, b *blocker) {
	if !b.ok() {
		return
	}
	_, err := rdb.Unblock(ctx, f.e.client, 0)
	switch {
	case topology.Denied(err):
		f.denied("CLIENT UNBLOCK", err)
	case err != nil && topology.Unsupported(err):
		b.disable()
	}
}

// denied switches to reads that need no CLIENT UNBLOCK (or, for CLIENT ID,
// no blocking connection) and says so, once per fetcher.
func (f *fetcher) denied(command string, err error) {
	f.mu.Lock()
	f.noUnblock = true
	f.mu.Unlock()
	f.deniedOnce.Do(func() {
		f.log.Warn("the Redis user may not run a command that interrupts blocking reads: polling idle partitions while others have events",
			"command", command,
			"cost", "a read of each idle partition every 50ms instead of one blocking read",
			"grant", topology.Grant(command),
			"error", err)
	})
}

// unblocker interrupts the blocking XREAD when the fetcher is woken. A
// CLIENT UNBLOCK sent before the XREAD reached the server finds nothing to
// unblock, so it is repeated while the same wait is still on.
func (f *fetcher) unblocker(ctx context.Context, b *blocker) {
	for {
		select {
		case <-ctx.Done():
			// Shutdown: end a blocking read at once rather than after ReadBlock.
			uctx, cancel := context.WithTimeout(context.Background(), time.Second)
			f.interrupt(uctx)
			cancel()
			return
		case <-f.unblock:
		}
		f.interrupt(ctx)
	}
}

func (f *fetcher) interrupt(ctx context.Context) {
	{
		for range 50 {
			f.mu.Lock()
			blocking, id := f.blocking, f.blockID
			f.mu.Unlock()
			if !blocking || id == 0 {
				break
			}
			n, err := rdb.Unblock(ctx, f.e.client, id)
			if topology.Denied(err) {
				f.denied("CLIENT UNBLOCK", err)
			}
			if err != nil || n == 1 {
				break
			}
			sleepCtx(ctx, 2*time.Millisecond)
		}
	}
}
