// Reading and acting on flows by ID: a flow's status (its graph, each
// node's state, the sinks' results), waiting for it, cancelling it, and
// listing the app's flows.

package task

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/leatdev/leat/app"
	"github.com/leatdev/leat/internal/rdb"
)

// A FlowState is where a flow is in its life.
type FlowState string

// The states of a flow. A flow being submitted is in no listing.
const (
	FlowSubmitting FlowState = "submitting" // its node tasks are being created
	FlowRunning    FlowState = "running"    // some node has not ended
	FlowSucceeded  FlowState = "succeeded"  // every node ended, none failing the flow
	FlowFailed     FlowState = "failed"     // a node with the FailFlow policy failed
	FlowCancelled  FlowState = "cancelled"  // cancelled (CancelFlow)
)

// Final reports whether s is a state a flow never leaves.
func (s FlowState) Final() bool {
	return s == FlowSucceeded || s == FlowFailed || s == FlowCancelled
}

// Waiting is the state of a flow node's task whose parents have not all
// ended: invisible to workers, counted as "waiting" in its queue.
const Waiting State = "waiting"

// WaitingChildren is the state of a flow node whose handler succeeded
// and added children (AddChild) that have not all ended.
const WaitingChildren State = "waiting-children"

// FlowNodeInfo is a node of a flow and its state.
type FlowNodeInfo struct {
	Name      string          `json:"name"`
	Queue     string          `json:"queue"`
	TaskID    string          `json:"task_id"`
	State     State           `json:"state"` // Waiting, its task's state, or how it ended
	Parents   []string        `json:"parents,omitempty"`
	SpawnedBy string          `json:"spawned_by,omitempty"` // the node that added it at run time (AddChild)
	OnFailure FailurePolicy   `json:"on_failure"`
	Result    json.RawMessage `json:"result,omitempty"`
	Error     string          `json:"error,omitempty"`
}

// FlowInfo is a flow's status.
type FlowInfo struct {
	ID         string         `json:"id"`
	State      FlowState      `json:"state"`
	CreatedAt  time.Time      `json:"created_at"`
	FinishedAt time.Time      `json:"finished_at,omitzero"`
	FailedBy   string         `json:"failed_by,omitempty"` // the node that failed the flow
	Nodes      []FlowNodeInfo `json:"nodes"`               // parents before children
	// Results are the results of its sinks (the nodes without children)
	// that succeeded, by node name.
	Results map[string]json.RawMessage `json:"results"`
}

// GetFlow returns the status of flow id of app a, or an error matching
// ErrNotFound. A node queued in its queue has its task's live state.
func GetFlow(ctx context.Context, a *app.App, id string) (*FlowInfo, error) {
	fl := flowsOf(a)
	m, err := rdb.FlowRecord(ctx, fl.c, fl.ks, id)
	if err != nil {
		return nil, err
	}
	if len(m) == 0 {
		return nil, fmt.Errorf("flow %q: %w", id, ErrNotFound)
	}
	ms := func(f string) time.Time {
		if n, _ := strconv.ParseInt(m[f], 10, 64); n > 0 {
			return time.UnixMilli(n)
		}
		return time.Time{}
	}
	in := &FlowInfo{ID: id, State: FlowState(m["st"]), CreatedAt: ms("c"), FinishedAt: ms("f"), FailedBy: m["why"],
		Results: map[string]json.RawMessage{}}
	var queued []int
	for f, st := range m {
		name, ok := strings.CutPrefix(f, "s:")
		if !ok {
			continue
		}
		n := FlowNodeInfo{Name: name, Queue: m["q:"+name], TaskID: FlowTaskID(id, name), State: State(st),
			OnFailure: FailurePolicy(m["o:"+name]), Error: m["e:"+name], SpawnedBy: m["sp:"+name]}
		if p := m["p:"+name]; p != "" {
			n.Parents = strings.Split(p, ",")
		}
		if r := m["r:"+name]; r != "" && json.Valid([]byte(r)) {
			n.Result = json.RawMessage(r)
			if m["c:"+name] == "" && n.SpawnedBy == "" {
				in.Results[name] = n.Result
			}
		}
		in.Nodes = append(in.Nodes, n)
	}
	sortNodes(in.Nodes)
	hashes := []string{}
	for i, n := range in.Nodes {
		if n.State == "queued" {
			queued = append(queued, i)
			hashes = append(hashes, fl.ks.TaskPrefix(n.Queue)+n.TaskID)
		}
	}
	if len(hashes) > 0 {
		live, err := rdb.TaskStates(ctx, fl.c, hashes)
		if err != nil {
			return nil, err
		}
		for j, i := range queued {
			if s := State(live[j][0]); s != "" {
				in.Nodes[i].State = s // else "queued": its task is gone
			}
		}
	}
	return in, nil
}

// sortNodes orders nodes parents first (by depth), then by name.
func sortNodes(nodes []FlowNodeInfo) {
	parents := map[string][]string{}
	for _, n := range nodes {
		parents[n.Name] = n.Parents
		if n.SpawnedBy != "" {
			parents[n.Name] = []string{n.SpawnedBy}
		}
	}
	depth := map[string]int{}
	var of func(string, int) int
	of = func(name string, guard int) int {
		if d, ok := depth[name]; ok || guard > len(nodes) {
			return d
		}
		d := 0
		for _, p := range parents[name] {
			d = max(d, of(p, guard+1)+1)
		}
		depth[name] = d
		return d
	}
	for _, n := range nodes {
		of(n.Name, 0)
	}
	slices.SortFunc(nodes, func(a, b FlowNodeInfo) int {
		if depth[a.Name] != depth[b.Name] {
			return depth[a.Name] - depth[b.Name]
		}
		return strings.Compare(a.Name, b.Name)
	})
}

// WaitFlow waits until flow id has ended and returns its status; it
// returns ctx's error when ctx ends first.
func WaitFlow(ctx context.Context, a *app.App, id string) (*FlowInfo, error) {
	fl := flowsOf(a)
	d := 5 * time.Millisecond
	for {
		st, err := rdb.FlowRecordState(ctx, fl.c, fl.ks, id)
		if err != nil {
			return nil, err
		}
		if st == "" {
			return nil, fmt.Errorf("flow %q: %w", id, ErrNotFound)
		}
		if FlowState(st).Final() {
			return GetFlow(ctx, a, id)
		}
		t := time.NewTimer(d)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, ctx.Err()
		case <-t.C:
		}
		d = min(2*d, 200*time.Millisecond)
	}
}

// CancelFlow cancels flow id: its nodes not started are cancelled, its
// running ones asked to stop (their tasks end cancelled unless they
// succeed first), and the flow is cancelled. A flow that is not running
// is left alone (ErrFinished; ErrNotFound when there is none).
func CancelFlow(ctx context.Context, a *app.App, id string) error {
	fl := flowsOf(a)
	step, err := rdb.FlowCancel(ctx, fl.c, fl.ks, id)
	if err != nil {
		return fmt.Errorf("flow %q: cancel: %w", id, err)
	}
	switch step.State {
	case "":
		return fmt.Errorf("flow %q: %w", id, ErrNotFound)
	case string(FlowRunning):
	default:
		return fmt.Errorf("%w: flow %q is %s", ErrFinished, id, step.State)
	}
	step.State = string(FlowCancelled)
	return fl.settle(ctx, id, step)
}

// FlowSummary is a flow as listed.
type FlowSummary struct {
	ID         string    `json:"id"`
	State      FlowState `json:"state"`
	Nodes      int       `json:"nodes"`
	Left       int       `json:"left"` // nodes not ended
	CreatedAt  time.Time `json:"created_at"`
	FinishedAt time.Time `json:"finished_at,omitzero"`
}

// ListFlows returns app a's flows in state (all but those being submitted
// when ""), newest first, at most limit (0: 100).
func ListFlows(ctx context.Context, a *app.App, state FlowState, limit int) ([]FlowSummary, error) {
	if limit <= 0 {
		limit = 100
	}
	fl := flowsOf(a)
	live, done, err := rdb.FlowIDs(ctx, fl.c, fl.ks, 10_000, true)
	if err != nil {
		return nil, err
	}
	ids := make([]string, 0, len(live)+len(done))
	seen := map[string]bool{}
	for _, z := range append(live, done...) {
		if s, ok := z.Member.(string); ok && !seen[s] {
			seen[s] = true
			ids = append(ids, s)
		}
	}
	states, err := rdb.FlowStates(ctx, fl.c, fl.ks, ids, false)
	if err != nil {
		return nil, err
	}
	var out []FlowSummary
	for i, s := range states {
		st := FlowState(s.State)
		if st == "" || st == FlowSubmitting || state != "" && st != state {
			continue
		}
		out = append(out, FlowSummary{ID: ids[i], State: st, Nodes: s.Nodes, Left: s.Left, CreatedAt: s.Created, FinishedAt: s.Ended})
	}
	slices.SortFunc(out, func(a, b FlowSummary) int { return b.CreatedAt.Compare(a.CreatedAt) })
	if len(out) > limit {
		out = out[:limit]
	}
	return out, nil
}
