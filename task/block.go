package task

import (
	"context"
	"errors"
	"math"
	"runtime"
	"slices"
	"sync"
	"time"
	"weak"

	"github.com/leatdev/leat/app"
	"github.com/leatdev/leat/internal/rdb"
	"github.com/leatdev/leat/internal/topology"
	"github.com/redis/go-redis/v9"
)

// A fetcher with nothing ready waits in a blocking read of the queue's
// ready streams (XREADGROUP, which takes the entries it returns: see
// worker.take). A read is never cut short by its context (it could leave
// entries read but not marked), so a stopping fetcher waits for it to end.
//
// On a single server (standalone or Sentinel) the blocking reads of all the
// task queues an App runs are one read, made by the App's reader on a
// connection of its own whose CLIENT ID it knows: an idle worker costs one
// connection and one blocking read per idleBlock, whatever its queues. A
// fetcher that starts waiting, or stops, ends the read in flight with
// CLIENT UNBLOCK (which ends it as a timeout would: nothing read), and the
// reader reads again for those waiting then. Where that cannot be done
// (Redis Cluster, whose queues live on different nodes and whose client
// keeps no connection apart; a Redis user that may not run CLIENT ID or
// CLIENT UNBLOCK; a proxy that does not know them) each queue's worker makes
// its own reads, of readBlock, so that a stop waits at most that long.
//
// Either way one fetcher of a queue's worker at a time waits in a read; the
// other, when it finds nothing either, waits for that read to end.

// idleBlock bounds the App's reader's blocking read.
const idleBlock = 5 * time.Second

// unblockAgain is how often CLIENT UNBLOCK is sent again while the read it
// meant has not ended (the first may have reached the server before the
// read did).
const unblockAgain = 10 * time.Millisecond

// reader makes the blocking reads of an App's task queues (see above).
type reader struct {
	off  func(command string, err error)
	name string // the consumer: the same for every queue of an App

	// u.mu guards the fields below too.
	u       unblockable
	waiting []*blockReq   // fetchers waiting, the read in flight's first
	reading int           // how many of waiting the read in flight serves
	more    chan struct{} // a fetcher started waiting (1 buffered)
	stop    chan struct{} // closed by close
	done    chan struct{} // closed when run returns
}

// blockReq is a fetcher's wait for new entries of its queue's streams.
type blockReq struct {
	streams []string // the queue's ready streams
	n       int64    // most entries per stream
	leaving bool     // its context ended: done with what the read gives
	res     []redis.XStream
	err     error
	done    chan struct{} // closed when res and err are set
}

func newReader(client *redis.Client, admin redis.UniversalClient, consumer string, off func(string, error)) *reader {
	r := &reader{
		u: unblockable{client: client, admin: admin}, off: off, name: consumer,
		more: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{}),
	}
	go r.run()
	return r
}

// close stops the reader once no fetcher waits; a read in flight is
// interrupted.
func (r *reader) close() {
	r.u.mu.Lock()
	close(r.stop)
	r.u.kick()
	r.u.mu.Unlock()
	<-r.done
}

// read waits for new entries of streams, at most n per stream, until ctx
// ends; redis.Nil when it read none. Not cut short by ctx: when ctx ends
// during a read that includes streams, that read is interrupted and what it
// returned, if anything, is returned.
func (r *reader) read(ctx context.Context, streams []string, n int64) ([]redis.XStream, error) {
	q := &blockReq{streams: streams, n: n, done: make(chan struct{})}
	r.u.mu.Lock()
	r.waiting = append(r.waiting, q)
	r.u.kick() // the read in flight does not read streams: read again
	r.u.mu.Unlock()
	select {
	case r.more <- struct{}{}:
	default:
	}
	select {
	case <-q.done:
		return q.res, q.err
	case <-ctx.Done():
	}
	r.u.mu.Lock()
	select {
	case <-q.done:
		r.u.mu.Unlock()
		return q.res, q.err
	default:
	}
	if i := slices.Index(r.waiting, q); i >= r.reading {
		r.waiting = slices.Delete(r.waiting, i, i+1)
		r.u.mu.Unlock()
		return nil, redis.Nil
	}
	q.leaving = true
	r.u.kick()
	r.u.mu.Unlock()
	<-q.done
	return q.res, q.err
}

// run reads for the fetchers waiting until close.
func (r *reader) run() {
	defer close(r.done)
	defer r.u.reset()
	failures := 0
	for {
		if !r.u.await(func() bool { return len(r.waiting) == 0 }, r.stop, r.more) {
			return
		}
		select {
		case <-r.stop:
			r.finish(len(r.waiting), nil, redis.Nil)
			r.u.mu.Unlock()
			return
		default:
		}
		// Each stream once: a queue's worker has one fetcher waiting at a
		// time, but an App could run a queue twice; the second waits for
		// the next read (finish puts it first). COUNT is per stream and the
		// same for all: the least any fetcher asks for, so that no queue's
		// worker takes more than it may start (a fetcher given fewer than
		// it asked for reads the rest at once, with the fetch script).
		var streams []string
		count := int64(math.MaxInt64)
		var chosen, later []*blockReq
		for _, q := range r.waiting {
			if slices.ContainsFunc(q.streams, func(s string) bool { return slices.Contains(streams, s) }) {
				later = append(later, q)
				continue
			}
			chosen = append(chosen, q)
			streams = append(streams, q.streams...)
			count = min(count, q.n)
		}
		served := len(chosen)
		r.waiting = append(chosen, later...)
		r.reading = served
		r.u.mu.Unlock()

		if err := r.u.ready(context.Background()); err != nil {
			r.u.mu.Lock()
			if refused(err) {
				r.off("CLIENT ID", err)
				r.finish(served, nil, redis.Nil) // they read again, each for itself
			} else {
				r.finish(served, nil, err)
			}
			r.u.mu.Unlock()
			failures++
			pause(r.stop, failures)
			continue
		}
		r.u.mu.Lock()
		r.u.begin()
		if len(r.waiting) > served || slices.ContainsFunc(r.waiting[:served], func(q *blockReq) bool { return q.leaving }) {
			r.u.kick() // waiting since the streams were chosen
		}
		select {
		case <-r.stop:
			r.u.kick()
		default:
		}
		r.u.mu.Unlock()
		res, err := rdb.ReadNew(context.Background(), r.u.conn, r.name, streams, count, idleBlock)
		r.u.mu.Lock()
		r.u.end(err)
		switch {
		case errors.Is(err, redis.Nil):
			failures = 0
			r.finish(served, nil, redis.Nil)
		case err != nil:
			r.finish(served, nil, err) // each worker recovers what it may have read
		default:
			failures = 0
			r.finish(served, res, nil)
		}
		r.u.mu.Unlock()
		if err != nil && !errors.Is(err, redis.Nil) {
			failures++
			pause(r.stop, failures)
		}
	}
}

// finish ends the waits of the first served fetchers waiting that the read
// (res, err) gave entries, or failed, or that leave; the others wait on,
// behind those the read did not serve.
// redis.Nil is the read's end with nothing read. r.mu is held.
func (r *reader) finish(served int, res []redis.XStream, err error) {
	stopping := false
	select {
	case <-r.stop:
		stopping = true
	default:
	}
	// those not served first, then those served that wait on
	kept := slices.Clone(r.waiting[served:])
	for _, q := range r.waiting[:served] {
		for _, s := range res {
			if slices.Contains(q.streams, s.Stream) && len(s.Messages) > 0 {
				q.res = append(q.res, s)
			}
		}
		switch {
		case len(q.res) > 0:
		case err != nil && !errors.Is(err, redis.Nil), q.leaving, stopping:
			q.err = err
			if q.err == nil {
				q.err = redis.Nil
			}
		default:
			kept = append(kept, q)
			continue
		}
		close(q.done)
	}
	r.waiting = kept
	r.reading = 0
}

// failureWait is the wait after failures in a row: 100ms per failure, up to 2s.
func failureWait(failures int) time.Duration {
	return min(time.Duration(failures)*100*time.Millisecond, 2*time.Second)
}

// pause waits failureWait(failures) before the next blocking command, or until
// stop is closed.
func pause(stop <-chan struct{}, failures int) {
	t := time.NewTimer(failureWait(failures))
	defer t.Stop()
	select {
	case <-stop:
	case <-t.C:
	}
}

// refused reports whether err is the server refusing a command for good
// (topology.Denied, topology.Unsupported). Other errors (a connection lost,
// a server restarting) pass.
func refused(err error) bool { return topology.Denied(err) || topology.Unsupported(err) }

// noInterruptsSaid holds the Apps whose logs said that blocking reads
// cannot be interrupted. The keys do not keep Apps alive.
var noInterruptsSaid sync.Map // weak.Pointer[app.App] -> struct{}

// noInterrupts says why blocking reads cannot be interrupted, once per App:
// a warning when the Redis user may not run command (what to grant), else a
// note.
func noInterrupts(a *app.App, command string, err error) {
	cost := "a blocking read per task queue every 500ms instead of one for all every 5s while idle"
	if _, said := noInterruptsSaid.LoadOrStore(weak.Make(a), struct{}{}); said {
		return // once per App, whatever its queues
	}
	runtime.AddCleanup(a, func(k weak.Pointer[app.App]) { noInterruptsSaid.Delete(k) }, weak.Make(a))
	if topology.Denied(err) {
		a.Logger().Warn("the Redis user may not run a command that interrupts blocking reads",
			"command", command, "cost", cost, "grant", topology.Grant(command), "error", err)
		return
	}
	a.Logger().Info("the server cannot interrupt blocking reads", "command", command, "cost", cost, "error", err)
}

// blockingRead reads new entries of streams for one of w's fetchers, at
// most n per stream, waiting while there are none: through the App's
// reader, or, where it cannot be used, for readBlock on its own. One
// fetcher of w at a time reads; another returns redis.Nil once that read
// ended.
func (w *worker) blockingRead(ctx context.Context, streams []string, n int) ([]redis.XStream, error) {
	w.mu.Lock()
	if w.owns > 0 {
		// A recovery waits for this fetcher's given section to close (see
		// enterOwn): a read now would hold it up until an entry came.
		w.mu.Unlock()
		return nil, redis.Nil
	}
	if w.reading != nil {
		ended := w.reading
		w.mu.Unlock()
		select {
		case <-ended:
		case <-ctx.Done():
		}
		return nil, redis.Nil
	}
	ended := make(chan struct{})
	w.reading = ended
	// A concurrency lowered meanwhile ends the wait (endRead): the fetcher
	// reserves again, for fewer; so does a recovery waiting (enterOwn).
	ctx, w.endRead = context.WithCancel(ctx)
	w.mu.Unlock()
	defer func() {
		w.mu.Lock()
		w.endRead()
		w.reading, w.endRead = nil, nil
		w.mu.Unlock()
		close(ended)
	}()
	if w.share.interruptible() {
		return w.share.reader.read(ctx, streams, int64(n))
	}
	return rdb.ReadNew(context.WithoutCancel(ctx), w.share.blk, w.q.worker, streams, int64(n), readBlock)
}
