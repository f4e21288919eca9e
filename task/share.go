package task

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/leatdev/leat/app"
	"github.com/leatdev/leat/internal/rdb"
	"github.com/leatdev/leat/internal/topology"
	"github.com/redis/go-redis/v9"
)

// share is what the task queue workers and leaders of an App share while
// any runs, so that an idle App costs a fixed number of connections
// whatever its queues: the client of their blocking commands, the reader
// of the ready streams (block.go), the wait on the leaders' wake lists
// (wake.go), the subscription to the queues' channels (hub.go) and the
// workers' beat (beat.go).
type share struct {
	app      *app.App
	refs     int // workers and leaders running (shares.mu)
	blk      redis.UniversalClient
	closeBlk func()
	bg       redis.UniversalClient // periodic work (bgConns connections)
	closeBg  func()
	reader   *reader    // nil where blocking commands cannot be interrupted
	wakes    *wakeLists // nil likewise
	off      atomic.Bool
	hub      *hub
	queues   []*core       // those whose workers run (shares.mu)
	beatStop chan struct{} // closed to stop the beat
	beatDone chan struct{} // closed when it stopped
	beating  sync.Mutex    // held by a beat, so a worker leaving is not noted alive again
	setup    sync.Mutex    // one queue's setUp at a time
	loaded   bool          // the task scripts were loaded (setup)
}

// bgConns is the pool of an App's periodic task queue work: the workers'
// beats, live settings, claims of running tasks and webhook polls, the
// leaders' promotions, reclaims and janitors. Each is a command or a script
// call once a second per queue, and they would otherwise fire at once on
// the application's client, whose pool grows to as many connections.
const bgConns = 4

var shares = struct {
	mu sync.Mutex
	m  map[*app.App]*share
}{m: map[*app.App]*share{}}

// setUp writes q's definition, creates its streams and loads the task
// scripts (once per share), one queue of the App at a time: the workers of
// an App start together, and would otherwise grow the application's pool
// to as many connections.
func (s *share) setUp(ctx context.Context, q *core) error {
	s.setup.Lock()
	defer s.setup.Unlock()
	if err := q.register(ctx); err != nil {
		return err
	}
	if err := q.createGroups(ctx); err != nil {
		return err
	}
	if q.set.events > 0 {
		if err := rdb.SetEvents(ctx, q.rdb, q.ks.TaskConfig(q.name), int64(q.set.events)); err != nil {
			return fmt.Errorf("task queue %q: turn events on: %w", q.name, err)
		}
	}
	if !s.loaded {
		if err := rdb.LoadTaskScripts(ctx, q.rdb); err != nil {
			return fmt.Errorf("task queue %q: load scripts: %w", q.name, err)
		}
		s.loaded = true
	}
	return nil
}

// join adds q's worker to the workers s beats for, after a first beat.
func (s *share) join(ctx context.Context, q *core) {
	shares.mu.Lock()
	s.queues = append(s.queues, q)
	shares.mu.Unlock()
	if err := beatOnce(ctx, s.bg, []*core{q}); err != nil && ctx.Err() == nil {
		q.log.Warn("task worker beat failed", "error", err)
	}
}

// leave ends the beat of q's worker, which leaves the queue's workers.
func (s *share) leave(q *core) {
	shares.mu.Lock()
	s.queues = slices.DeleteFunc(s.queues, func(o *core) bool { return o == q })
	shares.mu.Unlock()
	s.beating.Lock()
	leaveWorkers(s.bg, q)
	s.beating.Unlock()
}

// shareOf returns the share of q's App, made by the first of its workers
// and leaders to run; drop it when done.
func shareOf(ctx context.Context, q *core) *share {
	shares.mu.Lock()
	defer shares.mu.Unlock()
	if s := shares.m[q.app]; s != nil {
		s.refs++
		return s
	}
	s := &share{app: q.app, refs: 1, beatStop: make(chan struct{}), beatDone: make(chan struct{})}
	// blk never sends a command twice (topology.SendOnce), so a read whose
	// reply was lost is known; a connection per queue for the reads that
	// cannot be interrupted, one for the reader, one for the wake lists,
	// one for the subscription.
	s.blk, s.closeBlk = topology.SendOnce(q.rdb, len(Handled(q.app))+3)
	s.bg, s.closeBg = topology.Pool(q.rdb, bgConns)
	go s.beat(s.beatStop)
	s.hub = newHub(s.blk, q.app.Logger())
	if c, ok := s.blk.(*redis.Client); ok {
		off := func(command string, err error) {
			if !s.off.Swap(true) {
				noInterrupts(q.app, command, err)
			}
		}
		// CLIENT UNBLOCK of client 0, which does not exist: the answer is 0
		if err := rdb.ProbeUnblock(ctx, q.rdb); refused(err) {
			off("CLIENT UNBLOCK", err)
		} else {
			s.reader = newReader(c, q.rdb, q.worker, off)
			s.wakes = newWakeLists(c, q.rdb, off)
		}
	}
	shares.m[q.app] = s
	return s
}

// interruptible reports whether s's blocking commands can be interrupted
// (a single server, and a Redis user that may run CLIENT ID and CLIENT
// UNBLOCK).
func (s *share) interruptible() bool { return s.reader != nil && !s.off.Load() }

// drop ends a use of s; the last closes it.
func (s *share) drop() {
	shares.mu.Lock()
	s.refs--
	last := s.refs == 0
	if last {
		delete(shares.m, s.app)
	}
	shares.mu.Unlock()
	if !last {
		return
	}
	close(s.beatStop)
	<-s.beatDone
	if s.reader != nil {
		s.reader.close()
		s.wakes.close()
	}
	s.hub.close()
	s.closeBlk()
	s.closeBg()
}
