// Flows: the scripts of a flow's record (flow_*.lua, all in the flow's
// hash slot) and the app's indexes of flows (FlowsLive, FlowsDone). The
// scripts that create and release a flow's node tasks run in their queues'
// slots (task_flow.go).

package rdb

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

var (
	//go:embed flow_create.lua
	flowCreateSrc string
	//go:embed flow_start.lua
	flowStartSrc string
	//go:embed flow_node.lua
	flowNodeSrc string
	//go:embed flow_cancel.lua
	flowCancelSrc string
	//go:embed flow_parents.lua
	flowParentsSrc string
	//go:embed flow_spawn.lua
	flowSpawnSrc string

	flowCreate  = redis.NewScript(Describe("flow_create.lua", flowCreateSrc))
	flowStart   = redis.NewScript(Describe("flow_start.lua", flowStartSrc))
	flowNode    = redis.NewScript(Describe("flow_node.lua", flowNodeSrc))
	flowCancel  = redis.NewScript(Describe("flow_cancel.lua", flowCancelSrc))
	flowParents = redis.NewScript(Describe("flow_parents.lua", flowParentsSrc))
	flowSpawn   = redis.NewScript(Describe("flow_spawn.lua", flowSpawnSrc))
)

// FlowSpawn adds child to running node parent of flow id (flow_spawn.lua)
// and returns "added", "exists" (added by an earlier call of parent) or
// "refused" with why.
//
// KEYS: record, release set. ARGV: parent, child, queue, policy, task.
func FlowSpawn(ctx context.Context, c redis.Scripter, s KeySpace, id, parent, child, queue, policy string, task []byte) (string, string, error) {
	v, err := flowSpawn.Run(ctx, c, []string{s.Flow(id), s.FlowRelease(id)}, parent, child, queue, policy, task).StringSlice()
	if err != nil {
		return "", "", err
	}
	if len(v) == 0 {
		return "", "", errors.New("flow spawn: empty reply")
	}
	if len(v) == 1 {
		return v[0], "", nil
	}
	return v[0], v[1], nil
}

// FlowNodeDef is a node of a flow as its record keeps it.
type FlowNodeDef struct {
	Name, Queue, Policy string
	Parents, Children   string // comma-separated names
	NParents            int
}

// FlowRef is a node of a flow and its queue.
type FlowRef struct{ Node, Queue string }

// FlowCreate records flow id as submitting (flow_create.lua) and returns
// "created", or the state of the flow that exists with this ID.
//
// KEYS: record, definition. ARGV: retention ms, definition, n, then name,
// queue, policy, parents, children, parent count per node.
func FlowCreate(ctx context.Context, c redis.Scripter, s KeySpace, id string, retention time.Duration, def []byte, nodes []FlowNodeDef) (string, error) {
	args := make([]any, 0, 3+6*len(nodes))
	args = append(args, retention.Milliseconds(), def, len(nodes))
	for _, n := range nodes {
		args = append(args, n.Name, n.Queue, n.Policy, n.Parents, n.Children, n.NParents)
	}
	return flowCreate.Run(ctx, c, []string{s.Flow(id), s.FlowDef(id)}, args...).Text()
}

// FlowStart marks flow id running and its roots queued (flow_start.lua),
// and returns its state and the nodes to release.
//
// KEYS: record, release set. ARGV: the roots.
func FlowStart(ctx context.Context, c redis.Scripter, s KeySpace, id string, roots []string) (string, []FlowRef, error) {
	args := make([]any, len(roots))
	for i, r := range roots {
		args[i] = r
	}
	v, err := flowStart.Run(ctx, c, []string{s.Flow(id), s.FlowRelease(id)}, args...).Slice()
	if err != nil {
		return "", nil, err
	}
	if len(v) == 0 {
		return "", nil, errors.New("flow start: empty reply")
	}
	return toString(v[0]), refs(v[1:]), nil
}

// FlowStep is what recording a node's outcome (FlowNode) or cancelling a
// flow (FlowCancel) leaves to do.
type FlowStep struct {
	State   string    // the flow's state after the call ("" for no such flow)
	Expiry  time.Time // the end of the flow's retention, once it ended
	Release []FlowRef // node tasks to release
	Cancel  []FlowRef // node tasks to cancel
	Revive  []FlowRef // node tasks to revive (cancelled -> waiting), before the releases
	Resumed bool      // the flow failed and runs again (back to the live flows)
	// Gen is the flow's generation (resumes so far): cancellations and
	// revivals carry it, so that a cancellation of an earlier generation
	// leaves a revived task alone.
	Gen int64
}

// FlowNode records how node's task ended (flow_node.lua): outcome
// succeeded (data = result), failed, dead or cancelled (data = error).
//
// KEYS: record, release set, cancel set, definition, revive set. ARGV:
// node, outcome, data.
func FlowNode(ctx context.Context, c redis.Scripter, s KeySpace, id, node, outcome string, data []byte) (FlowStep, error) {
	v, err := flowNode.Run(ctx, c, flowKeys(s, id), node, outcome, data).Slice()
	if err != nil {
		return FlowStep{}, err
	}
	return parseFlowStep(v)
}

// NodeEnd is a node's outcome to record (FlowNodeAll).
type NodeEnd struct {
	Flow, Node, Outcome string
	Data                []byte
}

// FlowNodeAll records the outcomes of ends as FlowNode does, the script
// calls sharing one pipeline (the script loaded first when the server
// lacks it), and returns each one's step and error.
func FlowNodeAll(ctx context.Context, c redis.UniversalClient, s KeySpace, ends []NodeEnd) ([]FlowStep, []error) {
	steps, errs := make([]FlowStep, len(ends)), make([]error, len(ends))
	todo := make([]int, len(ends))
	for i := range todo {
		todo[i] = i
	}
	for try := 0; try < 2 && len(todo) > 0; try++ {
		pipe := c.Pipeline()
		cmds := make([]*redis.Cmd, len(todo))
		for j, i := range todo {
			e := ends[i]
			cmds[j] = flowNode.EvalSha(ctx, pipe, flowKeys(s, e.Flow), e.Node, e.Outcome, e.Data)
		}
		_, _ = pipe.Exec(ctx) // replies are read one by one
		var again []int
		for j, i := range todo {
			v, err := cmds[j].Slice()
			if err == nil {
				steps[i], err = parseFlowStep(v)
			}
			errs[i] = err
			if IsNoScript(err) {
				again = append(again, i) // nothing of it ran
			}
		}
		if len(again) == 0 || flowNode.Load(ctx, c).Err() != nil {
			break
		}
		todo = again
	}
	return steps, errs
}

func parseFlowStep(v []any) (FlowStep, error) {
	if len(v) < 6 {
		return FlowStep{}, fmt.Errorf("flow node: reply of %d values", len(v))
	}
	st := FlowStep{State: toString(v[0]), Resumed: toInt(v[4]) == 1, Gen: toInt(v[5])}
	if ms := toInt(v[1]); ms > 0 {
		st.Expiry = time.UnixMilli(ms)
	}
	all := refs(v[6:])
	r := min(int(toInt(v[2])), len(all))
	k := min(r+int(toInt(v[3])), len(all))
	st.Release, st.Cancel, st.Revive = all[:r], all[r:k], all[k:]
	return st, nil
}

// FlowCancel cancels running flow id (flow_cancel.lua) and returns its
// state before and the node tasks to cancel.
//
// KEYS: record, release set, cancel set, definition, revive set.
func FlowCancel(ctx context.Context, c redis.Scripter, s KeySpace, id string) (FlowStep, error) {
	v, err := flowCancel.Run(ctx, c, flowKeys(s, id)).Slice()
	if err != nil {
		return FlowStep{}, err
	}
	st := FlowStep{State: toString(v[0])}
	if len(v) >= 3 {
		st.Expiry = time.UnixMilli(toInt(v[1]))
		st.Gen = toInt(v[2])
		st.Cancel = refs(v[3:])
	}
	return st, nil
}

func flowKeys(s KeySpace, id string) []string {
	return []string{s.Flow(id), s.FlowRelease(id), s.FlowCancel(id), s.FlowDef(id), s.FlowRevive(id)}
}

// FlowParent is what a node's handler sees of one of its parents.
type FlowParent struct {
	Node, State, Result, Error string
}

// FlowParents returns what node's handler sees of its parents
// (flow_parents.lua).
//
// KEYS: record. ARGV: node.
func FlowParents(ctx context.Context, c redis.Scripter, s KeySpace, id, node string) ([]FlowParent, error) {
	v, err := flowParents.Run(ctx, c, []string{s.Flow(id)}, node).Slice()
	if err != nil {
		return nil, err
	}
	out := make([]FlowParent, 0, len(v)/4)
	for i := 0; i+3 < len(v); i += 4 {
		out = append(out, FlowParent{Node: toString(v[i]), State: toString(v[i+1]), Result: toString(v[i+2]), Error: toString(v[i+3])})
	}
	return out, nil
}

func refs(v []any) []FlowRef {
	out := make([]FlowRef, 0, len(v)/2)
	for i := 0; i+1 < len(v); i += 2 {
		out = append(out, FlowRef{Node: toString(v[i]), Queue: toString(v[i+1])})
	}
	return out
}

// FlowDone removes nodes from flow id's release set (done: their tasks
// were released), cancel set (done: cancelled) and revive set (done:
// revived), in one round trip.
func FlowDone(ctx context.Context, c redis.UniversalClient, s KeySpace, id string, released, cancelled, revived []string) error {
	if len(released) == 0 && len(cancelled) == 0 && len(revived) == 0 {
		return nil
	}
	_, err := c.TxPipelined(ctx, func(p redis.Pipeliner) error {
		if len(revived) > 0 {
			p.SRem(ctx, s.FlowRevive(id), strs(revived)...)
		}
		if len(released) > 0 {
			p.SRem(ctx, s.FlowRelease(id), strs(released)...)
		}
		if len(cancelled) > 0 {
			p.SRem(ctx, s.FlowCancel(id), strs(cancelled)...)
		}
		return nil
	})
	return err
}

func strs(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}

// FlowIndex adds flow id to the app's live flows (score: now).
func FlowIndex(ctx context.Context, c redis.UniversalClient, s KeySpace, id string, at time.Time) error {
	return c.ZAddNX(ctx, s.FlowsLive(), redis.Z{Score: float64(at.UnixMilli()), Member: id}).Err()
}

// FlowEnded moves flow id from the live flows to the ended ones, kept
// there until expiry (the end of its retention).
func FlowEnded(ctx context.Context, c redis.UniversalClient, s KeySpace, id string, expiry time.Time) error {
	_, err := c.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.ZAdd(ctx, s.FlowsDone(), redis.Z{Score: float64(expiry.UnixMilli()), Member: id})
		p.ZRem(ctx, s.FlowsLive(), id)
		return nil
	})
	return err
}

// FlowResumed moves flow id from the ended flows back to the live ones
// (score: at).
func FlowResumed(ctx context.Context, c redis.UniversalClient, s KeySpace, id string, at time.Time) error {
	_, err := c.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.ZAdd(ctx, s.FlowsLive(), redis.Z{Score: float64(at.UnixMilli()), Member: id})
		p.ZRem(ctx, s.FlowsDone(), id)
		return nil
	})
	return err
}

// FlowsDue returns the ended flows whose retention ended by now (they are
// dropped from the index by FlowTrimDone).
func FlowsDue(ctx context.Context, c redis.UniversalClient, s KeySpace, now time.Time, n int64) ([]string, error) {
	return c.ZRangeArgs(ctx, redis.ZRangeArgs{Key: s.FlowsDone(), ByScore: true, Start: "-inf",
		Stop: strconv.FormatInt(now.UnixMilli(), 10), Count: n}).Result()
}

// FlowForget removes flow id from the live flows (its record is gone).
func FlowForget(ctx context.Context, c redis.UniversalClient, s KeySpace, id string) error {
	return c.ZRem(ctx, s.FlowsLive(), id).Err()
}

// FlowIDs returns the app's live flows (oldest first, at most n; their
// scores are created ms) and, with ended, the ended ones kept until now
// or later (scores: end of retention).
func FlowIDs(ctx context.Context, c redis.UniversalClient, s KeySpace, n int64, ended bool) (live, done []redis.Z, err error) {
	live, err = c.ZRangeArgsWithScores(ctx, redis.ZRangeArgs{Key: s.FlowsLive(), Start: 0, Stop: n - 1}).Result()
	if err != nil || !ended {
		return live, nil, err
	}
	done, err = c.ZRangeArgsWithScores(ctx, redis.ZRangeArgs{
		Key: s.FlowsDone(), ByScore: true, Start: strconv.FormatInt(time.Now().UnixMilli(), 10), Stop: "+inf",
		Count: n,
	}).Result()
	return live, done, err
}

// FlowTrimDone removes the ended flows whose retention ended before now.
func FlowTrimDone(ctx context.Context, c redis.UniversalClient, s KeySpace, now time.Time) error {
	return c.ZRemRangeByScore(ctx, s.FlowsDone(), "-inf", strconv.FormatInt(now.UnixMilli(), 10)).Err()
}

// FlowState is what a listing or the sweep reads of a flow's record.
type FlowState struct {
	State            string
	Created, Changed time.Time
	Ended            time.Time
	Nodes, Left      int
	Retention        time.Duration
	Gen              int64    // the flow's generation (FlowStep.Gen)
	Release, Cancel  []string // members of the release and cancel sets (with sets only)
	Revive           []string // members of the revive set (with sets only)
}

// FlowStates reads the state of flows ids in one round trip; a flow whose
// record is gone has State "". With sets, the release and cancel sets too.
func FlowStates(ctx context.Context, c redis.UniversalClient, s KeySpace, ids []string, sets bool) ([]FlowState, error) {
	pipe := c.Pipeline()
	hm := make([]*redis.SliceCmd, len(ids))
	rel := make([]*redis.StringSliceCmd, len(ids))
	can := make([]*redis.StringSliceCmd, len(ids))
	rev := make([]*redis.StringSliceCmd, len(ids))
	for i, id := range ids {
		hm[i] = pipe.HMGet(ctx, s.Flow(id), "st", "c", "at", "f", "n", "left", "ret", "g")
		if sets {
			rel[i] = pipe.SMembers(ctx, s.FlowRelease(id))
			can[i] = pipe.SMembers(ctx, s.FlowCancel(id))
			rev[i] = pipe.SMembers(ctx, s.FlowRevive(id))
		}
	}
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return nil, err
	}
	out := make([]FlowState, len(ids))
	for i := range ids {
		v := hm[i].Val()
		if len(v) < 8 {
			continue
		}
		ms := func(x any) time.Time {
			if n, _ := strconv.ParseInt(toString(x), 10, 64); n > 0 {
				return time.UnixMilli(n)
			}
			return time.Time{}
		}
		num := func(x any) int { n, _ := strconv.Atoi(toString(x)); return n }
		out[i] = FlowState{State: toString(v[0]), Created: ms(v[1]), Changed: ms(v[2]), Ended: ms(v[3]), Nodes: num(v[4]), Left: num(v[5]),
			Retention: time.Duration(num(v[6])) * time.Millisecond, Gen: int64(num(v[7]))}
		if sets {
			out[i].Release, out[i].Cancel, out[i].Revive = rel[i].Val(), can[i].Val(), rev[i].Val()
		}
	}
	return out, nil
}

// FlowRecord returns every field of flow id's record (empty: no such flow).
func FlowRecord(ctx context.Context, c redis.UniversalClient, s KeySpace, id string) (map[string]string, error) {
	return c.HGetAll(ctx, s.Flow(id)).Result()
}

// FlowQueues returns the queue of each of nodes of flow id ("" for an
// unknown node).
func FlowQueues(ctx context.Context, c redis.UniversalClient, s KeySpace, id string, nodes []string) ([]string, error) {
	fields := make([]string, len(nodes))
	for i, n := range nodes {
		fields[i] = "q:" + n
	}
	v, err := c.HMGet(ctx, s.Flow(id), fields...).Result()
	if err != nil {
		return nil, err
	}
	out := make([]string, len(nodes))
	for i := range nodes {
		if i < len(v) {
			out[i] = toString(v[i])
		}
	}
	return out, nil
}

// FlowRecordState returns the state of flow id ("" for no such flow).
func FlowRecordState(ctx context.Context, c redis.UniversalClient, s KeySpace, id string) (string, error) {
	v, err := c.HGet(ctx, s.Flow(id), "st").Result()
	if errors.Is(err, redis.Nil) {
		return "", nil
	}
	return v, err
}

// FlowDefinition returns flow id's definition (nil when gone).
func FlowDefinition(ctx context.Context, c redis.UniversalClient, s KeySpace, id string) ([]byte, error) {
	b, err := c.Get(ctx, s.FlowDef(id)).Bytes()
	if errors.Is(err, redis.Nil) {
		return nil, nil
	}
	return b, err
}
