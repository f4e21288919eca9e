// Moving flows on: when a node's task has ended and its outcome is
// recorded in its queue, the worker records it in the flow
// (rdb.FlowNode), which answers with the children that became ready and
// the nodes to cancel; the worker then releases and cancels those in their
// queues and confirms it. What a kill or a lost reply leaves undone in
// between, the sweep (flow_sweep.go) does.

package task

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/leatdev/leat/app"
	"github.com/leatdev/leat/internal/rdb"
	"github.com/redis/go-redis/v9"
)

// flows is what moves an app's flows on.
type flows struct {
	c   redis.UniversalClient
	ks  rdb.KeySpace
	log *slog.Logger
}

func flowsOf(a *app.App) *flows {
	cfg := a.Config()
	return &flows{c: a.Client(), ks: rdb.NewKeySpace(cfg.KeyPrefix, cfg.Name), log: a.Logger()}
}

// A Parent is what a flow node's handler sees of one of its parents.
type Parent struct {
	// State is the parent's: Succeeded, or Failed, Dead or Cancelled when
	// its failure policy is ContinueOnFailure.
	State State `json:"state"`
	// Result is the parent's result (JSON) when it succeeded.
	Result json.RawMessage `json:"result,omitempty"`
	// Error is the parent's last error when it did not succeed.
	Error string `json:"error,omitempty"`
}

// parents returns what the handler of flow node taskID sees of its
// parents (nil for a task of no flow).
func (q *core) parents(ctx context.Context, taskID string) (map[string]Parent, error) {
	id, node, ok := flowNodeOf(taskID)
	if !ok {
		return nil, nil
	}
	ps, err := rdb.FlowParents(ctx, q.rdb, q.ks, id, node)
	if err != nil {
		return nil, fmt.Errorf("read the results of the flow node's parents: %w", err)
	}
	out := make(map[string]Parent, len(ps))
	for _, p := range ps {
		pa := Parent{State: State(p.State), Error: p.Error}
		if p.Result != "" && json.Valid([]byte(p.Result)) {
			pa.Result = json.RawMessage(p.Result)
		}
		out[p.Node] = pa
	}
	return out, nil
}

// advanceFlows records in their flows the outcomes of flow nodes of batch
// that ended their tasks (the finish.lua calls cmds recorded them), the
// script calls sharing a round trip, then does what each leaves to do. A
// failure that passes queues the node's step to be tried again
// (flow_retry.go); any other is logged, and the sweep finds the node
// later.
func (w *worker) advanceFlows(ctx context.Context, batch []ended, cmds rdb.FinishReplies) {
	var ends []rdb.NodeEnd
	for c := range cmds {
		for i, st := range cmds.States(c) {
			k := c*completeBatch + i
			if k >= len(batch) || !State(st).Final() {
				continue
			}
			e := batch[k]
			if id, node, ok := flowNodeOf(e.ID); ok {
				ends = append(ends, rdb.NodeEnd{Flow: id, Node: node, Outcome: st, Data: e.Data})
			}
		}
	}
	if len(ends) == 0 {
		return
	}
	fl := &flows{c: w.q.rdb, ks: w.q.ks, log: w.q.log}
	steps, errs := rdb.FlowNodeAll(ctx, fl.c, fl.ks, ends)
	for i, e := range ends {
		err := errs[i]
		if err == nil {
			err = fl.settle(ctx, e.Flow, steps[i])
		}
		switch {
		case err == nil:
		case w.steps != nil && passingFailure(err):
			w.q.log.Info("moving a flow on failed: trying again", "flow", e.Flow, "node", e.Node, "error", err)
			w.steps.add(e)
		default:
			w.q.log.Warn("moving a flow on failed: its leader does it later", "flow", e.Flow, "node", e.Node, "error", err)
		}
	}
}

// nodeEnded records in its flow that the task of node taskID ended in
// state with data (its result or its error), then does what that leaves
// to do.
func (fl *flows) nodeEnded(ctx context.Context, taskID, state string, data []byte) error {
	id, node, ok := flowNodeOf(taskID)
	if !ok {
		return nil
	}
	step, err := rdb.FlowNode(ctx, fl.c, fl.ks, id, node, state, data)
	if err != nil {
		return err
	}
	return fl.settle(ctx, id, step)
}

// settle revives, releases and cancels the node tasks step names (in
// that order), confirms it in the flow's record, moves a resumed flow back
// to the live flows and an ended flow with nothing left to do to the
// ended flows.
func (fl *flows) settle(ctx context.Context, id string, step rdb.FlowStep) error {
	if step.State == "" {
		return nil
	}
	var errs []error
	if step.Resumed {
		if err := rdb.FlowResumed(ctx, fl.c, fl.ks, id, time.Now()); err != nil {
			errs = append(errs, err)
		}
	}
	revived, err := fl.perQueue(id, step.Revive, func(k, ids []string) error {
		_, err := rdb.FlowRevive(ctx, fl.c, k, step.Gen, ids)
		return err
	})
	if err != nil {
		// a release before its revival would find the task cancelled
		return errors.Join(append(errs, err)...)
	}
	released, err := fl.perQueue(id, step.Release, func(k, ids []string) error {
		_, err := rdb.FlowRelease(ctx, fl.c, k, ids)
		return err
	})
	if err != nil {
		errs = append(errs, err)
	}
	// Every node is cancelled before any running one is told to stop: a
	// running node that stopped at once would free its worker's slot for a
	// pending node of the same flow not cancelled yet.
	var cancelled []string
	type signal struct{ queue, task string }
	var signals []signal
	for _, r := range step.Cancel {
		tid := FlowTaskID(id, r.Node)
		_, action, err := rdb.CancelNode(ctx, fl.c, rdb.Keys(fl.ks, r.Queue), tid, step.Gen)
		if err != nil {
			errs = append(errs, fmt.Errorf("cancel in queue %q: %w", r.Queue, err))
			continue
		}
		if action == "signal" {
			signals = append(signals, signal{r.Queue, tid})
		}
		cancelled = append(cancelled, r.Node)
	}
	for _, sg := range signals {
		if err := rdb.SignalCancel(ctx, fl.c, fl.ks.TaskCancel(sg.queue), sg.task); err != nil {
			fl.log.Warn("publishing a cancellation failed", "task", sg.task, "error", err)
		}
	}
	if err := rdb.FlowDone(ctx, fl.c, fl.ks, id, released, cancelled, revived); err != nil {
		errs = append(errs, err)
	}
	if len(errs) == 0 && FlowState(step.State).Final() && !step.Expiry.IsZero() {
		if err := rdb.FlowEnded(ctx, fl.c, fl.ks, id, step.Expiry); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// perQueue runs op (a release or a revival) on the tasks of refs, one
// call per queue (given the queue's keys and the task IDs), and returns
// the nodes done.
func (fl *flows) perQueue(id string, refs []rdb.FlowRef, op func(keys, ids []string) error) ([]string, error) {
	byQueue := map[string][]string{}
	var order []string
	for _, r := range refs {
		if _, ok := byQueue[r.Queue]; !ok {
			order = append(order, r.Queue)
		}
		byQueue[r.Queue] = append(byQueue[r.Queue], r.Node)
	}
	var done []string
	var errs []error
	for _, q := range order {
		nodes := byQueue[q]
		ids := make([]string, len(nodes))
		for i, n := range nodes {
			ids[i] = FlowTaskID(id, n)
		}
		if err := op(rdb.Keys(fl.ks, q), ids); err != nil {
			errs = append(errs, fmt.Errorf("queue %q: %w", q, err))
			continue
		}
		done = append(done, nodes...)
	}
	return done, errors.Join(errs...)
}
