// Flow steps tried again: a flow node's outcome that the worker recorded
// in its queue but could not record in its flow, or whose releases and
// cancellations it could not finish (advanceFlows), because of a failure
// that passes (a cut link, a lost reply, Redis restarting or at
// maxmemory), is queued on the worker and tried again with a backoff
// (flowRetryFirst doubling up to flowRetryMax) until it succeeds, fails
// with an error that does not pass, or the worker stops. The flows' sweep
// (flow_sweep.go) stays the safety net for what this leaves: a worker
// killed, more steps failing than flowRetryCap, a mistake.
//
// Sending a step again is safe: flow_node.lua records a node's outcome
// once and hands back, when run again, what is still to do (the nodes to
// release, cancel and revive, the end of an ended flow's retention), and
// releases, cancellations and revivals move a task only from the state
// they expect. Before each try the node's task is read: a task no longer
// ended (a failed flow resumed and revived it, or it was requeued) runs
// again and records its own outcome, so the step is dropped; one ended
// again is recorded with its outcome now, as the sweep does.

package task

import (
	"context"
	"strings"
	"sync"
	"time"

	"github.com/leatdev/leat/internal/rdb"
	"github.com/leatdev/leat/internal/topology"
)

// The backoff of the flow steps tried again, and how many a worker holds
// at most (beyond, the sweep does them).
const (
	flowRetryFirst = 50 * time.Millisecond
	flowRetryMax   = 2 * time.Second
	flowRetryCap   = 4096
)

// passingFailure reports whether err is a failure that passes (Redis
// unreachable, restarting, at maxmemory, a reply lost), as the completer
// classifies the failures to record outcomes: worth trying again.
func passingFailure(err error) bool {
	return topology.IsTransient(err) || strings.Contains(err.Error(), "OOM command not allowed")
}

// flowRetrier holds a worker's flow steps to try again and tries them
// (run, one goroutine per worker).
type flowRetrier struct {
	q    *core
	wake chan struct{} // a step was queued (capacity 1)

	mu   sync.Mutex
	todo []flowRetry
	full bool // the cap was hit and logged, since the queue last had room
}

// flowRetry is a flow step to try again: the node's end, the tries so far
// and when the next is due.
type flowRetry struct {
	end rdb.NodeEnd
	try int
	due time.Time
}

func newFlowRetrier(q *core) *flowRetrier {
	return &flowRetrier{q: q, wake: make(chan struct{}, 1)}
}

// add queues the step of e, to be tried after the first wait, unless the
// retrier holds flowRetryCap steps already (then the sweep does it).
func (r *flowRetrier) add(e rdb.NodeEnd) {
	r.mu.Lock()
	if len(r.todo) >= flowRetryCap {
		full := r.full
		r.full = true
		r.mu.Unlock()
		if !full {
			r.q.log.Warn("too many flow steps to try again: the flows' leader does the rest", "max", flowRetryCap)
		}
		return
	}
	r.full = false
	r.todo = append(r.todo, flowRetry{end: e, due: time.Now().Add(flowRetryFirst)})
	r.mu.Unlock()
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

// again queues s to be tried once more, after a wait twice the last.
func (r *flowRetrier) again(s flowRetry) {
	s.try++
	s.due = time.Now().Add(flowRetryWait(s.try))
	r.mu.Lock()
	r.todo = append(r.todo, s)
	r.mu.Unlock()
}

// flowRetryWait is the wait before try number try (0: the first).
func flowRetryWait(try int) time.Duration {
	d := flowRetryFirst
	for range try {
		d *= 2
		if d >= flowRetryMax {
			return flowRetryMax
		}
	}
	return d
}

// due removes and returns the steps due by now, and when the next of the
// rest is due (zero: none).
func (r *flowRetrier) due(now time.Time) ([]flowRetry, time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []flowRetry
	var next time.Time
	kept := r.todo[:0]
	for _, s := range r.todo {
		if !s.due.After(now) {
			out = append(out, s)
			continue
		}
		if next.IsZero() || s.due.Before(next) {
			next = s.due
		}
		kept = append(kept, s)
	}
	clear(r.todo[len(kept):])
	r.todo = kept
	return out, next
}

// held returns how many steps wait.
func (r *flowRetrier) held() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.todo)
}

// run tries the steps queued as they fall due, until ctx ends (the worker
// stopped: what is left is the sweep's).
func (r *flowRetrier) run(ctx context.Context) {
	timer := time.NewTimer(flowRetryMax)
	defer timer.Stop()
	for {
		steps, next := r.due(time.Now())
		if len(steps) > 0 {
			r.try(ctx, steps)
			continue // more may have fallen due meanwhile
		}
		var tick <-chan time.Time
		if !next.IsZero() {
			timer.Reset(time.Until(next))
			tick = timer.C
		}
		select {
		case <-ctx.Done():
			if n := r.held(); n > 0 {
				r.q.log.Info("the worker stops with flow steps to try again: the flows' leader does them", "steps", n)
			}
			return
		case <-r.wake:
		case <-tick:
		}
		timer.Stop()
	}
}

// try sends steps again: their tasks' states read in one round trip, the
// flow_node.lua calls sharing one, then what each leaves to do. A step
// that fails again with a failure that passes is queued again.
func (r *flowRetrier) try(ctx context.Context, steps []flowRetry) {
	q := r.q
	hashes := make([]string, len(steps))
	for i, s := range steps {
		hashes[i] = q.ks.TaskPrefix(q.name) + FlowTaskID(s.end.Flow, s.end.Node)
	}
	live, err := rdb.TaskStates(ctx, q.rdb, hashes)
	if err != nil {
		for _, s := range steps {
			r.failed(ctx, s, err)
		}
		return
	}
	var sent []flowRetry
	var ends []rdb.NodeEnd
	for i, s := range steps {
		ts := State(live[i][0])
		if !ts.Final() {
			// running again (or gone: the sweep's): its new end moves the flow
			q.log.Debug("a flow step to try again is dropped: its task is no longer ended",
				"flow", s.end.Flow, "node", s.end.Node, "state", ts)
			continue
		}
		e := s.end
		e.Outcome, e.Data = string(ts), []byte(live[i][2])
		if ts == Succeeded {
			e.Data = []byte(live[i][1])
		}
		s.end = e
		sent = append(sent, s)
		ends = append(ends, e)
	}
	if len(ends) == 0 {
		return
	}
	fl := &flows{c: q.rdb, ks: q.ks, log: q.log}
	results, errs := rdb.FlowNodeAll(ctx, fl.c, fl.ks, ends)
	for i, s := range sent {
		err := errs[i]
		if err == nil {
			err = fl.settle(ctx, s.end.Flow, results[i])
		}
		if err != nil {
			r.failed(ctx, s, err)
			continue
		}
		q.log.Debug("a flow step was done on a later try", "flow", s.end.Flow, "node", s.end.Node, "tries", s.try+2)
	}
}

// failed queues step s again after err, when err passes and the worker
// runs on; else it leaves s to the sweep.
func (r *flowRetrier) failed(ctx context.Context, s flowRetry, err error) {
	switch {
	case ctx.Err() != nil:
		r.again(s) // counted, and left to the sweep, as the worker stops
	case passingFailure(err):
		r.again(s)
	default:
		r.q.log.Warn("moving a flow on failed: its leader does it later", "flow", s.end.Flow, "node", s.end.Node, "error", err)
	}
}
