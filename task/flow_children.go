// Children added at run time: a flow node's handler adds nodes to its flow
// (map over a list it just read), and its node waits for them before it
// ends: its own children then see their results too.

package task

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/leatdev/leat/internal/rdb"
)

// ErrNotFlowNode is returned by AddChild outside the handler of a flow
// node.
var ErrNotFlowNode = errors.New("task: not a flow node's handler")

// nodeKey is the context key of the flow node a handler runs.
type nodeKey struct{}

// runningNode is the flow node a handler runs.
type runningNode struct {
	q          *core
	flow, node string
}

// withNode returns ctx for the handler of task taskID of q: a flow node's
// carries it (AddChild).
func withNode(ctx context.Context, q *core, taskID string) context.Context {
	id, node, ok := flowNodeOf(taskID)
	if !ok {
		return ctx
	}
	return context.WithValue(ctx, nodeKey{}, runningNode{q: q, flow: id, node: node})
}

// AddChild adds a node named name to the flow of the node whose handler
// runs with ctx: a task of q with payload p and opts (as AddNode's). It
// runs at once, and the running node, once its handler has succeeded,
// waits for it (for all the children it added) before it ends; its own
// children then see the added children's results in Parents, beside its
// own. The child's failure policy is FailFlow; with policy, the given one.
//
// Adding a child of a name the node added already (an attempt run again)
// is no error and adds nothing. A name another node of the flow has, a
// node or flow that is not running, and a ctx of no flow node's handler
// (ErrNotFlowNode) are refused.
func AddChild[P, R any](ctx context.Context, q *Queue[P, R], name string, p P, policy FailurePolicy, opts ...EnqueueOption) error {
	rn, ok := ctx.Value(nodeKey{}).(runningNode)
	if !ok {
		return ErrNotFlowNode
	}
	if q == nil {
		return fmt.Errorf("%w: add child %q: queue is nil", ErrInvalidFlow, name)
	}
	if policy == "" {
		policy = FailFlow
	}
	// the child is checked as a flow of its own would be
	f := &Flow{app: rn.q.app, byName: map[string]*Node{}}
	AddNode(f, name, q, p, opts...).OnFailure(policy)
	b, err := f.check()
	if err != nil {
		return fmt.Errorf("add child %q: %w", name, err)
	}
	it := b.items[0]
	it.Task.ID = FlowTaskID(rn.flow, name)
	def, err := json.Marshal(it)
	if err != nil {
		return err
	}
	if err := q.registerRetry(ctx); err != nil {
		return err
	}
	fl := &flows{c: rn.q.rdb, ks: rn.q.ks, log: rn.q.log}
	res, why, err := rdb.FlowSpawn(ctx, fl.c, fl.ks, rn.flow, rn.node, name, q.name, string(policy), def)
	if err != nil {
		return fmt.Errorf("add child %q: %w", name, err)
	}
	if res == "refused" {
		return fmt.Errorf("%w: add child %q: %s", ErrInvalidFlow, name, why)
	}
	return fl.createSpawned(ctx, rn.flow, name, it)
}

// createSpawned creates the task of a child added at run time (left alone
// if it exists) and releases it.
func (fl *flows) createSpawned(ctx context.Context, id, name string, it flowItem) error {
	if _, err := rdb.FlowNodes(ctx, fl.c, rdb.Keys(fl.ks, it.Queue), []rdb.NewTask{it.Task}); err != nil {
		return fmt.Errorf("add child %q: create its task: %w", name, err)
	}
	return fl.settle(ctx, id, rdb.FlowStep{State: string(FlowRunning), Release: []rdb.FlowRef{{Node: name, Queue: it.Queue}}})
}
