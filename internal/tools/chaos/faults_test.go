//go:build linux

package chaos_test

import (
	"context"
	"math/rand/v2"
	"syscall"
	"testing"
	"time"

	"github.com/leatdev/leat/internal/tools/chaos"
	"github.com/leatdev/leat/internal/tools/redistest"
	"github.com/leatdev/leat/task"
)

// Bounds of the fleet while faults run.
const (
	initialWorkers = 3
	minWorkers     = 2 // a kill with fewer alive starts a worker instead
	maxWorkers     = 5 // a start with more alive kills one instead
)

// faults counts the faults injected.
type faults struct {
	Kills, Stalls, MidEvent, MidNode, Freezes, Starts, Pauses, Throttles, Cuts, RedisRestarts int
}

// injector injects faults at random moments (from its own seeded source)
// until its context ends.
type injector struct {
	t     *testing.T
	rng   *rand.Rand
	fleet *fleet
	srv   *redistest.Server
	queue *task.Queue[chaos.Chore, chaos.Done]
	begin time.Time
	n     faults
}

// hold is how long a stalled worker stays stopped, or a frozen link
// frozen: past the lock expiry (and the task visibility), so that its
// partitions and tasks move to other workers meanwhile.
func (in *injector) hold() time.Duration {
	return 2*chaos.LockExpiry + time.Duration(in.rng.Int64N(int64(2*time.Second)))
}

func (in *injector) logf(format string, args ...any) {
	in.t.Helper()
	in.t.Logf("%8s  "+format, append([]any{time.Since(in.begin).Round(time.Millisecond)}, args...)...)
}

// run injects faults until ctx ends: first one of each kind (kill, stall,
// freeze, start, pause, throttle, cut) in random order, then kinds at random, with a pause of 2
// to 6 seconds between faults; the Redis restart comes once, at a random
// moment between 30% and 60% of the run. A fault in progress when ctx
// ends is finished (the worker continued, the link thawed) first.
func (in *injector) run(ctx context.Context, d time.Duration) {
	restartAt := time.Duration(float64(d) * (0.3 + 0.3*in.rng.Float64()))
	first := in.rng.Perm(7)
	for i := 0; ; {
		gap := 2*time.Second + time.Duration(in.rng.Int64N(int64(4*time.Second)))
		select {
		case <-ctx.Done():
			return
		case <-time.After(gap):
		}
		if in.n.RedisRestarts == 0 && time.Since(in.begin) >= restartAt {
			in.restartRedis()
			continue
		}
		kind := in.rng.IntN(7)
		if i < len(first) {
			kind = first[i]
			i++
		}
		switch kind {
		case 0:
			in.kill()
		case 1:
			in.stall()
		case 2:
			in.freeze()
		case 3:
			in.start()
		case 4:
			in.pause()
		case 5:
			in.throttle()
		case 6:
			in.cut()
		}
	}
}

func (in *injector) pick() *proc {
	alive := in.fleet.alive()
	if len(alive) == 0 {
		return nil
	}
	return alive[in.rng.IntN(len(alive))]
}

// cut makes a worker's link drop one reply chunk in 40, with its
// connection, for 6 to 8 seconds: the commands ran, the worker never hears
// their replies (fenced reads, acknowledgements, commits, lock refreshes,
// task fetches and outcomes, heartbeats), as when a connection breaks on
// the way back; it reconnects and goes on.
func (in *injector) cut() {
	p := in.pick()
	if p == nil {
		return
	}
	hold := in.hold()
	before := p.proxy.Cuts()
	p.proxy.CutEvery(40)
	time.Sleep(hold)
	p.proxy.CutEvery(0)
	in.logf("cut %s's replies for %s: %d cut", p.id, hold.Round(time.Millisecond), p.proxy.Cuts()-before)
	in.n.Cuts++
}

// kill SIGKILLs a worker: its partitions move after the lock expiry, its
// pending entries and running tasks are taken over by others.
func (in *injector) kill() {
	if len(in.fleet.alive()) <= minWorkers {
		in.start()
		return
	}
	p := in.pick()
	in.logf("kill %s (SIGKILL)", p.id)
	p.kill()
	in.n.Kills++
}

// start starts a new worker: partitions are rebalanced onto it.
func (in *injector) start() {
	if len(in.fleet.alive()) >= maxWorkers {
		in.kill()
		return
	}
	p := in.fleet.start()
	in.logf("start %s", p.id)
	in.n.Starts++
}

// stall stops a worker in the middle of an event (it stops itself with
// SIGSTOP on SIGUSR1, after recording the event and before committing it)
// for longer than the lock expiry, then continues it: its commit must be
// refused, as the partition has a new owner. Every second stall stops it
// in the middle of a flow node instead (SIGUSR2: after the node's N
// record, or its first child added at run time), 5 seconds longer, past
// the visibility timeout and a leadership change: the node runs again
// elsewhere, and the stalled run resumes late. A worker that gets no event (node) within 10 seconds is stopped
// with SIGSTOP wherever it is.
func (in *injector) stall() {
	p := in.pick()
	if p == nil {
		return
	}
	node := in.n.Stalls%2 == 1
	if node {
		_ = p.signal(syscall.SIGUSR2)
	} else {
		_ = p.signal(syscall.SIGUSR1)
	}
	deadline := time.Now().Add(10 * time.Second)
	for !p.stopped() && time.Now().Before(deadline) && !p.exited() {
		time.Sleep(10 * time.Millisecond)
	}
	where := "in the middle of an event"
	if node {
		where = "in the middle of a flow node"
	}
	if p.stopped() && node {
		in.n.MidNode++
	} else if p.stopped() {
		in.n.MidEvent++
	} else {
		where = "between events"
		_ = p.signal(syscall.SIGSTOP)
	}
	hold := in.hold()
	if node {
		// long enough for the leadership to move (the stalled worker may
		// lead) and the new leader to reclaim the node's task
		hold += chaos.Visibility - chaos.LockExpiry + chaos.LeaderLease
	}
	in.logf("stall %s %s for %s (SIGSTOP)", p.id, where, hold.Round(time.Millisecond))
	time.Sleep(hold)
	_ = p.signal(syscall.SIGCONT)
	in.logf("continue %s (SIGCONT)", p.id)
	in.n.Stalls++
}

// freeze freezes a worker's link to Redis with its sockets open for longer
// than the lock expiry, then thaws it: the worker notices only through its
// own deadlines.
func (in *injector) freeze() {
	p := in.pick()
	if p == nil {
		return
	}
	hold := in.hold()
	in.logf("freeze %s's link for %s", p.id, hold.Round(time.Millisecond))
	p.proxy.Freeze()
	time.Sleep(hold)
	p.proxy.Thaw()
	in.logf("thaw %s's link", p.id)
	in.n.Freezes++
}

// pause pauses the task queue for as long as a stall, then resumes it:
// workers start none of its tasks meanwhile while the producer goes on
// enqueueing; entries a blocking read handed a worker stay pending with it
// and are taken first after the resume, or reclaimed if it was killed.
func (in *injector) pause() {
	hold := in.hold()
	in.logf("pause the task queue for %s", hold.Round(time.Millisecond))
	in.retry("pause the task queue", in.queue.Pause)
	time.Sleep(hold)
	in.retry("resume the task queue", in.queue.Resume)
	in.logf("resume the task queue")
	in.n.Pauses++
}

// throttle sets a tight rate limit on the task queue live (Queue.SetRate:
// 2 tasks per 500ms over all workers) for as long as a stall, then clears
// it: workers take at most the window's budget, the entries a blocking read
// handed a worker beyond it stay pending with it and are taken first once
// the budget allows, or reclaimed if it was killed.
func (in *injector) throttle() {
	hold := in.hold()
	in.logf("throttle the task queue to 2 tasks per 500ms for %s", hold.Round(time.Millisecond))
	in.retry("throttle the task queue", func(ctx context.Context) error { return in.queue.SetRate(ctx, 2, 500*time.Millisecond) })
	time.Sleep(hold)
	in.retry("clear the task queue's rate", in.queue.ClearRate)
	in.logf("clear the task queue's rate")
	in.n.Throttles++
}

// retry calls fn until it succeeds, for at most 30 seconds.
func (in *injector) retry(what string, fn func(context.Context) error) {
	in.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		err := fn(ctx)
		cancel()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			in.t.Fatalf("%s: %v", what, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// restartRedis stops redis-server gracefully (SIGTERM: it fsyncs its
// append-only file) and starts it again on the same port and directory.
func (in *injector) restartRedis() {
	in.logf("restart redis-server (SIGTERM, then start on the same port)")
	in.srv.Shutdown(in.t)
	in.srv.Relaunch(in.t)
	in.logf("redis-server is back")
	in.n.RedisRestarts++
}
