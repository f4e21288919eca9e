// The flows' sweep: leader-side work (one lease for the app's flows, among
// the workers that run task queues) that finishes what a kill or a lost
// reply left undone. Every flowSweepEvery it reads the live flows and:
//   - finishes a submission left submitting for flowSubmitTimeout (the
//     producer died or gave up): the node tasks that exist are kept, the
//     others created, the roots released, from the definition the record
//     keeps;
//   - releases the nodes of a release set and cancels those of a cancel
//     set (a worker marked them, then died or lost the link);
//   - checks the nodes of a running flow that has not changed for
//     flowIdleCheck against their tasks (at most once per flowIdleCheck):
//     a task that ended without its flow knowing (its worker died between
//     the two steps) is recorded as the worker would have; a queued node
//     whose task still waits is released; a child added at run time whose
//     adder died before creating its task gets it;
//   - revives the nodes of a revive set (a failed flow resumed);
//   - moves ended flows with nothing left to do to the ended flows, and
//     forgets those past their retention.

package task

import (
	"context"
	"encoding/json"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/leatdev/leat/app"
	"github.com/leatdev/leat/internal/declared"
	"github.com/leatdev/leat/internal/rdb"
)

// The sweep's timings (test binaries shorten them: see setFlowTimings).
var (
	flowSweepEvery    atomic.Int64 // ns; default 2s
	flowSubmitTimeout atomic.Int64 // ns; default a minute
	flowIdleCheck     atomic.Int64 // ns; default 30s
)

func init() {
	flowSweepEvery.Store(int64(2 * time.Second))
	flowSubmitTimeout.Store(int64(time.Minute))
	flowIdleCheck.Store(int64(30 * time.Second))
}

// sweepBatch is how many live flows one sweep reads.
const sweepBatch = 1000

// registerFlowSweep registers the sweep on a once (Handle calls it).
func registerFlowSweep(a *app.App) error {
	if _, loaded := declared.Of(a).LoadOrStore("task-flow-sweep", true); loaded {
		return nil
	}
	sw := &sweeper{flows: flowsOf(a), checked: map[string]time.Time{}}
	return a.Background("task-flows", sw.run, app.Schedule{LeaderOnly: true, Lease: rdb.FlowLease})
}

// run sweeps every flowSweepEvery, on the real clock (a repair, like the
// queues' reclaims: a testing kit's clock does not move it), until the
// leader term (ctx) ends. It never returns before: a leader-only task run
// once per term that returned would be recorded as done.
func (fl *sweeper) run(ctx context.Context) error {
	t := time.NewTicker(time.Duration(flowSweepEvery.Load()))
	defer t.Stop()
	for {
		if err := fl.sweep(ctx); err != nil && ctx.Err() == nil {
			fl.log.Warn("flow sweep failed", "error", err)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// sweeper is the sweep's state: when each idle running flow's nodes were
// last checked against their tasks (at most once per flowIdleCheck, as a
// check reads every node not ended). Runs of the sweep never overlap.
type sweeper struct {
	*flows
	checked map[string]time.Time
}

// sweep runs once over the live flows.
func (fl *sweeper) sweep(ctx context.Context) error {
	now := time.Now()
	if err := fl.trimDone(ctx, now); err != nil {
		return err
	}
	live, _, err := rdb.FlowIDs(ctx, fl.c, fl.ks, sweepBatch, false)
	if err != nil || len(live) == 0 {
		return err
	}
	ids := make([]string, 0, len(live))
	for _, z := range live {
		s, _ := z.Member.(string)
		ids = append(ids, s)
	}
	states, err := rdb.FlowStates(ctx, fl.c, fl.ks, ids, true)
	if err != nil {
		return err
	}
	submitTimeout, idle := time.Duration(flowSubmitTimeout.Load()), time.Duration(flowIdleCheck.Load())
	seen := make(map[string]bool, len(ids))
	for _, id := range ids {
		seen[id] = true
	}
	for id := range fl.checked {
		if !seen[id] {
			delete(fl.checked, id)
		}
	}
	for i, id := range ids {
		if ctx.Err() != nil {
			return nil
		}
		s := states[i]
		created := time.UnixMilli(int64(live[i].Score))
		var err error
		switch {
		case s.State == "":
			if now.Sub(created) > submitTimeout {
				err = rdb.FlowForget(ctx, fl.c, fl.ks, id) // never recorded, or expired
			}
		case s.State == string(FlowSubmitting):
			if now.Sub(s.Created) > submitTimeout {
				fl.log.Warn("finishing the submission of a flow left half done", "flow", id)
				err = fl.resume(ctx, id)
			}
		default:
			check := now.Sub(s.Changed) > idle && now.Sub(fl.checked[id]) > idle
			if check {
				fl.checked[id] = now
			}
			err = fl.repairFlow(ctx, id, s, check)
		}
		if err != nil {
			fl.log.Warn("sweeping a flow failed", "flow", id, "error", err)
		}
	}
	return nil
}

// repairFlow does what flow id's sets leave to do and, when check, checks
// its nodes against their tasks.
func (fl *flows) repairFlow(ctx context.Context, id string, s rdb.FlowState, check bool) error {
	step := rdb.FlowStep{State: s.State, Gen: s.Gen}
	if FlowState(s.State).Final() {
		step.Expiry = s.Ended.Add(s.Retention)
	}
	nodes := append(append(append([]string(nil), s.Release...), s.Cancel...), s.Revive...)
	if len(nodes) > 0 {
		queues, err := rdb.FlowQueues(ctx, fl.c, fl.ks, id, nodes)
		if err != nil {
			return err
		}
		for i, n := range nodes {
			r := rdb.FlowRef{Node: n, Queue: queues[i]}
			switch {
			case i < len(s.Release):
				step.Release = append(step.Release, r)
			case i < len(s.Release)+len(s.Cancel):
				step.Cancel = append(step.Cancel, r)
			default:
				step.Revive = append(step.Revive, r)
			}
		}
	}
	if err := fl.settle(ctx, id, step); err != nil {
		return err
	}
	if check && s.State == string(FlowRunning) {
		return fl.checkNodes(ctx, id)
	}
	return nil
}

// checkNodes records the nodes of flow id whose tasks ended without the
// flow knowing, and releases queued nodes whose tasks still wait.
func (fl *flows) checkNodes(ctx context.Context, id string) error {
	m, err := rdb.FlowRecord(ctx, fl.c, fl.ks, id)
	if err != nil || m["st"] != string(FlowRunning) {
		return err
	}
	type open struct{ node, queue, state string }
	var nodes []open
	var hashes []string
	for f, st := range m {
		name, ok := cutNode(f)
		if !ok || (st != "queued" && st != "waiting") {
			continue
		}
		q := m["q:"+name]
		nodes = append(nodes, open{name, q, st})
		hashes = append(hashes, fl.ks.TaskPrefix(q)+FlowTaskID(id, name))
	}
	if len(nodes) == 0 {
		return nil
	}
	live, err := rdb.TaskStates(ctx, fl.c, hashes)
	if err != nil {
		return err
	}
	var release []rdb.FlowRef
	for i, n := range nodes {
		ts, res, msg := State(live[i][0]), live[i][1], live[i][2]
		switch {
		case ts.Final():
			data := msg
			if ts == Succeeded {
				data = res
			}
			fl.log.Info("recording a flow node whose task ended unrecorded", "flow", id, "node", n.node, "state", ts)
			if err := fl.nodeEnded(ctx, FlowTaskID(id, n.node), string(ts), []byte(data)); err != nil {
				return err
			}
		case ts == "" && n.state == "queued" && m["t:"+n.node] != "":
			// a child added at run time whose adder died before creating it
			var it flowItem
			if err := json.Unmarshal([]byte(m["t:"+n.node]), &it); err != nil {
				return fmt.Errorf("node %q: its definition: %w", n.node, err)
			}
			if err := fl.createSpawned(ctx, id, n.node, it); err != nil {
				return err
			}
		case ts == "" && n.state == "queued":
			if err := fl.nodeEnded(ctx, FlowTaskID(id, n.node), string(Failed), []byte("the node's task is gone")); err != nil {
				return err
			}
		case ts == Waiting && n.state == "queued":
			release = append(release, rdb.FlowRef{Node: n.node, Queue: n.queue})
		}
	}
	if len(release) > 0 {
		return fl.settle(ctx, id, rdb.FlowStep{State: string(FlowRunning), Release: release})
	}
	return nil
}

func cutNode(field string) (string, bool) {
	if len(field) > 2 && field[:2] == "s:" {
		return field[2:], true
	}
	return "", false
}

// trimDone drops from the ended flows those past their retention, but
// moves back to the live flows one that resumed while its worker died
// before moving it (its record has no TTL again).
func (fl *flows) trimDone(ctx context.Context, now time.Time) error {
	due, err := rdb.FlowsDue(ctx, fl.c, fl.ks, now, sweepBatch)
	if err != nil || len(due) == 0 {
		return err
	}
	states, err := rdb.FlowStates(ctx, fl.c, fl.ks, due, false)
	if err != nil {
		return err
	}
	for i, s := range states {
		if s.State != "" && !FlowState(s.State).Final() {
			if err := rdb.FlowResumed(ctx, fl.c, fl.ks, due[i], now); err != nil {
				return err
			}
		}
	}
	return rdb.FlowTrimDone(ctx, fl.c, fl.ks, now)
}
