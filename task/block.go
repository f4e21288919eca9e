package task

import (
	"context"
	"errors"
	"math"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"
	"weak"

	"github.com/leatdev/leat/app"
	"github.com/leatdev/leat/internal/taskrdb"
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
	client *redis.Client         // the App's blocking client (share.blk)
	admin  redis.UniversalClient // sends CLIENT UNBLOCK: the App's client
	off    func(command string, err error)
	group  string // the consumer group and consumer: the same for every
	name   string // queue of an App

	mu      sync.Mutex
	waiting []*blockReq   // fetchers waiting, the read in flight's first
	reading int           // how many of waiting the read in flight serves
	ended   chan struct{} // closed when the read in flight ends
	kicked  bool          // CLIENT UNBLOCK is being sent for it
	more    chan struct{} // a fetcher started waiting (1 buffered)
	stop    chan struct{} // closed by close
	done    chan struct{} // closed when run returns
	id      int64         // CLIENT ID of the read's connection
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
		client: client, admin: admin, off: off, group: taskrdb.Group, name: consumer,
		more: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{}),
	}
	go r.run()
	return r
}

// close stops the reader once no fetcher waits; a read in flight is
// interrupted.
func (r *reader) close() {
	r.mu.Lock()
	close(r.stop)
	r.kick()
	r.mu.Unlock()
	<-r.done
}

// read waits for new entries of streams, at most n per stream, until ctx
// ends; redis.Nil when it read none. Not cut short by ctx: when ctx ends
// during a read that includes streams, that read is interrupted and what it
// returned, if anything, is returned.
func (r *reader) read(ctx context.Context, streams []string, n int64) ([]redis.XStream, error) {
	q := &blockReq{streams: streams, n: n, done: make(chan struct{})}
	r.mu.Lock()
	r.waiting = append(r.waiting, q)
	r.kick() // the read in flight does not read streams: read again
	r.mu.Unlock()
	select {
	case r.more <- struct{}{}:
	default:
	}
	select {
	case <-q.done:
		return q.res, q.err
	case <-ctx.Done():
	}
	r.mu.Lock()
	select {
	case <-q.done:
		r.mu.Unlock()
		return q.res, q.err
	default:
	}
	if i := slices.Index(r.waiting, q); i >= r.reading {
		r.waiting = slices.Delete(r.waiting, i, i+1)
		r.mu.Unlock()
		return nil, redis.Nil
	}
	q.leaving = true
	r.kick()
	r.mu.Unlock()
	<-q.done
	return q.res, q.err
}

// kick interrupts the read in flight, if any (r.mu is held): CLIENT
// UNBLOCK, sent again every unblockAgain until the read ended.
func (r *reader) kick() {
	if r.ended == nil || r.kicked {
		return
	}
	r.kicked = true
	ended, id := r.ended, r.id
	go func() {
		for {
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			_ = r.admin.ClientUnblock(ctx, id).Err()
			cancel()
			select {
			case <-ended:
				return
			case <-time.After(unblockAgain):
			}
		}
	}()
}

// run reads for the fetchers waiting until close.
func (r *reader) run() {
	defer close(r.done)
	var conn *redis.Conn
	defer func() {
		if conn != nil {
			_ = conn.Close()
		}
	}()
	failures := 0
	for {
		r.mu.Lock()
		for len(r.waiting) == 0 {
			r.mu.Unlock()
			select {
			case <-r.stop:
				return
			case <-r.more:
			}
			r.mu.Lock()
		}
		select {
		case <-r.stop:
			r.finish(len(r.waiting), nil, redis.Nil)
			r.mu.Unlock()
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
		r.mu.Unlock()

		if conn == nil {
			conn = r.client.Conn()
			id, err := conn.ClientID(context.Background()).Result()
			if err != nil {
				_ = conn.Close()
				conn = nil
				r.mu.Lock()
				if refused(err) {
					r.off("CLIENT ID", err)
					r.finish(served, nil, redis.Nil) // they read again, each for itself
				} else {
					r.finish(served, nil, err)
				}
				r.mu.Unlock()
				failures++
				r.pause(failures)
				continue
			}
			r.mu.Lock()
			r.id = id
			r.mu.Unlock()
		}
		r.mu.Lock()
		r.ended, r.kicked = make(chan struct{}), false
		if len(r.waiting) > served || slices.ContainsFunc(r.waiting[:served], func(q *blockReq) bool { return q.leaving }) {
			r.kick() // waiting since the streams were chosen
		}
		select {
		case <-r.stop:
			r.kick()
		default:
		}
		r.mu.Unlock()
		res, err := conn.XReadGroup(context.Background(), &redis.XReadGroupArgs{
			Group: r.group, Consumer: r.name, Streams: readArgs(streams), Count: count, Block: idleBlock,
		}).Result()
		r.mu.Lock()
		close(r.ended)
		r.ended = nil
		switch {
		case errors.Is(err, redis.Nil):
			failures = 0
			r.finish(served, nil, redis.Nil)
		case err != nil:
			_ = conn.Close()
			conn = nil
			r.finish(served, nil, err) // each worker recovers what it may have read
		default:
			failures = 0
			r.finish(served, res, nil)
		}
		r.mu.Unlock()
		if err != nil && !errors.Is(err, redis.Nil) {
			failures++
			r.pause(failures)
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

// pause waits after a failure before the next read: 100ms per failure in
// a row, up to 2s, or until close.
func (r *reader) pause(failures int) {
	t := time.NewTimer(min(time.Duration(failures)*100*time.Millisecond, 2*time.Second))
	defer t.Stop()
	select {
	case <-r.stop:
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
	w.mu.Unlock()
	defer func() {
		w.mu.Lock()
		w.reading = nil
		w.mu.Unlock()
		close(ended)
	}()
	if r := w.share.reader; r != nil && !w.share.off.Load() {
		return r.read(ctx, streams, int64(n))
	}
	args := &redis.XReadGroupArgs{Group: taskrdb.Group, Consumer: w.q.worker, Streams: readArgs(streams), Count: int64(n), Block: readBlock}
	return w.share.blk.XReadGroup(context.WithoutCancel(ctx), args).Result()
}

// readArgs returns XREADGROUP's STREAMS arguments for new entries of streams.
func readArgs(streams []string) []string {
	out := append(make([]string, 0, 2*len(streams)), streams...)
	for range streams {
		out = append(out, ">")
	}
	return out
}

// share is what the task queue workers of an App share while any runs:
// the client of their blocking reads and cancel subscription, the reader,
// the subscription.
type share struct {
	app      *app.App
	refs     int // workers running (shares.mu)
	blk      redis.UniversalClient
	closeBlk func()
	reader   *reader // nil where blocking reads cannot be interrupted
	off      atomic.Bool
	hub      *hub
	queues   []*core       // those whose workers run (shares.mu)
	beatStop chan struct{} // closed to stop the beat (beat.go)
	beatDone chan struct{} // closed when it stopped
	beating  sync.Mutex    // held by a beat, so a worker leaving is not noted alive again
}

var shares = struct {
	mu sync.Mutex
	m  map[*app.App]*share
}{m: map[*app.App]*share{}}

// acquireShare returns the share of q's App, made by the first worker to
// run, after a first beat of q's worker; release it when the worker ends.
func acquireShare(ctx context.Context, q *core) *share {
	s := shareOf(ctx, q)
	if err := beatOnce(ctx, []*core{q}); err != nil && ctx.Err() == nil {
		q.log.Warn("task worker beat failed", "error", err)
	}
	return s
}

// shareOf returns the share of q's App with q among its queues.
func shareOf(ctx context.Context, q *core) *share {
	shares.mu.Lock()
	defer shares.mu.Unlock()
	if s := shares.m[q.app]; s != nil {
		s.refs++
		s.queues = append(s.queues, q)
		return s
	}
	// blk never sends a command twice (topology.SendOnce), so a read whose
	// reply was lost is known; a connection per queue for the reads that
	// cannot be interrupted, one for the reader, one for the subscription.
	s := &share{app: q.app, refs: 1, queues: []*core{q}, beatStop: make(chan struct{}), beatDone: make(chan struct{})}
	go s.beat(s.beatStop)
	s.blk, s.closeBlk = topology.SendOnce(q.rdb, len(Handled(q.app))+2)
	s.hub = newHub(s.blk, q.app.Logger())
	if c, ok := s.blk.(*redis.Client); ok {
		off := func(command string, err error) {
			if !s.off.Swap(true) {
				noInterrupts(q.app, command, err)
			}
		}
		// CLIENT UNBLOCK of client 0, which does not exist: the answer is 0
		if err := q.rdb.ClientUnblock(ctx, 0).Err(); refused(err) {
			off("CLIENT UNBLOCK", err)
		} else {
			s.reader = newReader(c, q.rdb, q.worker, off)
		}
	}
	shares.m[q.app] = s
	return s
}

// release ends the use of s by q's worker, which leaves the queue's
// workers; the last closes s.
func (s *share) release(q *core) {
	shares.mu.Lock()
	s.queues = slices.DeleteFunc(s.queues, func(o *core) bool { return o == q })
	s.refs--
	last := s.refs == 0
	if last {
		delete(shares.m, s.app)
	}
	shares.mu.Unlock()
	if last {
		close(s.beatStop)
		<-s.beatDone
	}
	s.beating.Lock()
	leave(q)
	s.beating.Unlock()
	if !last {
		return
	}
	if s.reader != nil {
		s.reader.close()
	}
	s.hub.close()
	s.closeBlk()
}
