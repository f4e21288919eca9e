// Flows: a directed acyclic graph of tasks across any queues, submitted in
// one call. Each node is an ordinary task of its queue, created waiting
// when the flow is submitted and made pending when all its parents have
// ended (see docs/flows.md for how this holds across hash slots, under
// kills and lost replies). This file builds and checks a flow; Submit
// writes it (flow_submit.go), the workers move it on (flow_advance.go),
// the leader-side sweep repairs it (flow_sweep.go).

package task

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/leatdev/leat/app"
	"github.com/leatdev/leat/internal/rdb"
)

// ErrInvalidFlow is matched by the error of a flow refused at Submit for
// bad input (names, dependencies, a cycle, a node's options or payload):
// nothing was written.
var ErrInvalidFlow = errors.New("task: invalid flow")

// FlowIDPrefix starts the task IDs of flow nodes ("flow:" + flow ID + ":" +
// node name); the ID option refuses it.
const FlowIDPrefix = "flow:"

// Limits of a flow.
const (
	// MaxFlowNodes is the most nodes a flow holds.
	MaxFlowNodes = 100_000
	// DefaultFlowRetention is how long a flow's record is kept once it
	// ended, unless FlowRetention says otherwise.
	DefaultFlowRetention = 24 * time.Hour
)

var (
	flowIDRE   = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,100}$`)
	nodeNameRE = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,64}$`)
)

// A FailurePolicy says what a node's failure (failed, dead or cancelled)
// does to its flow.
type FailurePolicy string

const (
	// FailFlow fails the flow: its nodes not started are cancelled, its
	// running ones asked to stop (the default).
	FailFlow FailurePolicy = "fail"
	// IgnoreFailure lets the node's children run without its result (it is
	// absent from their Parents).
	IgnoreFailure FailurePolicy = "ignore"
	// ContinueOnFailure lets the node's children run with its failure as
	// input (its Parent has the state and the error).
	ContinueOnFailure FailurePolicy = "continue"
)

// A Flow is a graph of tasks built with AddNode, After, Chain and Chord,
// then written with Submit. A Flow is not safe for concurrent use while
// it is built.
type Flow struct {
	app       *app.App
	id        string
	retention time.Duration
	nodes     []*Node
	byName    map[string]*Node
	errs      []error
}

// A Node is one task of a flow: an enqueue on a queue, with its parents.
type Node struct {
	flow    *Flow
	name    string
	q       *core
	payload []byte
	opts    []EnqueueOption
	parents []*Node
	policy  FailurePolicy
}

// A FlowOption tweaks a flow.
type FlowOption func(*Flow) error

// FlowID gives the flow an ID of the caller's choice (1 to 100 letters,
// digits, '_', '.', '-'): submitting a flow whose ID exists returns
// ErrDuplicate, so a producer that does not know whether its Submit went
// through can submit again.
func FlowID(id string) FlowOption {
	return func(f *Flow) error {
		if !flowIDRE.MatchString(id) {
			return fmt.Errorf("flow ID %q is invalid: use 1 to 100 letters, digits, '_', '.' or '-'", id)
		}
		f.id = id
		return nil
	}
}

// FlowRetention keeps the flow's record (its graph, node states, results)
// for d once it ended (default DefaultFlowRetention; 1s to 365 days).
func FlowRetention(d time.Duration) FlowOption {
	return func(f *Flow) error {
		if d < time.Second || d > 365*24*time.Hour {
			return fmt.Errorf("flow retention %s is out of range (1s to 365 days)", d)
		}
		f.retention = d
		return nil
	}
}

// NewFlow starts a flow of app a. Errors of the options and of the nodes
// added are returned by Submit.
func NewFlow(a *app.App, opts ...FlowOption) *Flow {
	f := &Flow{app: a, retention: DefaultFlowRetention, byName: map[string]*Node{}}
	for _, o := range opts {
		if o == nil {
			continue
		}
		if err := o(f); err != nil {
			f.errs = append(f.errs, err)
		}
	}
	return f
}

// AddNode adds a node named name to f: a task of q with payload p and the
// enqueue options opts (WithMaxRetries, WithTimeout, WithRetention,
// Priority, Key, Headers, Webhook; not ID, Delay, At or Unique: a node runs
// when its parents have ended). Its failure policy is FailFlow unless
// OnFailure says otherwise.
func AddNode[P, R any](f *Flow, name string, q *Queue[P, R], p P, opts ...EnqueueOption) *Node {
	n := &Node{flow: f, name: name, opts: opts, policy: FailFlow}
	if q != nil {
		n.q = q.core
	}
	switch {
	case !nodeNameRE.MatchString(name):
		f.errs = append(f.errs, fmt.Errorf("node name %q is invalid: use 1 to 64 letters, digits, '_', '.' or '-'", name))
	case f.byName[name] != nil:
		f.errs = append(f.errs, fmt.Errorf("node %q is added twice", name))
	case q == nil:
		f.errs = append(f.errs, fmt.Errorf("node %q: queue is nil", name))
	default:
		b, err := encodePayload(p)
		if err == nil && q.check != nil {
			err = q.check(b)
		}
		if err != nil {
			f.errs = append(f.errs, fmt.Errorf("node %q: payload: %w", name, err))
		}
		n.payload = b
		f.byName[name] = n
	}
	f.nodes = append(f.nodes, n)
	return n
}

// After makes parents n's parents (added to those it has): n runs once they
// have all ended (succeeded, or failed with IgnoreFailure or
// ContinueOnFailure). It returns n.
func (n *Node) After(parents ...*Node) *Node {
	for _, p := range parents {
		if p == nil || p.flow != n.flow {
			n.flow.errs = append(n.flow.errs, fmt.Errorf("node %q: a parent is nil or of another flow", n.name))
			continue
		}
		n.parents = append(n.parents, p)
	}
	return n
}

// OnFailure sets what n's failure does to the flow. It returns n.
func (n *Node) OnFailure(p FailurePolicy) *Node {
	switch p {
	case FailFlow, IgnoreFailure, ContinueOnFailure:
		n.policy = p
	default:
		n.flow.errs = append(n.flow.errs, fmt.Errorf("node %q: unknown failure policy %q (fail, ignore or continue)", n.name, p))
	}
	return n
}

// Name returns the node's name.
func (n *Node) Name() string { return n.name }

// Chain makes each node the parent of the next: nodes run one after the
// other.
func (f *Flow) Chain(nodes ...*Node) {
	for i := 1; i < len(nodes); i++ {
		nodes[i].After(nodes[i-1])
	}
}

// Chord makes the nodes of group, which run in parallel, the parents of
// callback, which runs once they have all ended.
func (f *Flow) Chord(group []*Node, callback *Node) { callback.After(group...) }

// FlowTaskID returns the ID of the task of node in flow id.
func FlowTaskID(id, node string) string { return FlowIDPrefix + id + ":" + node }

// flowNodeOf returns the flow and node of a flow node's task ID.
func flowNodeOf(taskID string) (id, node string, ok bool) {
	rest, ok := strings.CutPrefix(taskID, FlowIDPrefix)
	if !ok {
		return "", "", false
	}
	i := strings.LastIndexByte(rest, ':')
	if i <= 0 || i == len(rest)-1 {
		return "", "", false
	}
	return rest[:i], rest[i+1:], true
}

// built is a checked flow, ready to write.
type built struct {
	id    string
	nodes []rdb.FlowNodeDef
	roots []string
	items []flowItem
	cores map[string]*core // by queue
}

// flowItem is a node's task as the flow's definition keeps it, from which
// a submission left half done is finished (flow_submit.go).
type flowItem struct {
	Node  string      `json:"node"`
	Queue string      `json:"queue"`
	Task  rdb.NewTask `json:"task"`
}

// check checks f whole and returns what Submit writes: every error of f
// is reported, joined.
func (f *Flow) check() (*built, error) {
	errs := append([]error(nil), f.errs...)
	if len(f.nodes) == 0 {
		errs = append(errs, errors.New("a flow needs a node"))
	}
	if len(f.nodes) > MaxFlowNodes {
		errs = append(errs, fmt.Errorf("%d nodes: a flow holds at most %d", len(f.nodes), MaxFlowNodes))
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("%w: %w", ErrInvalidFlow, errors.Join(errs...))
	}
	b := &built{id: f.id, cores: map[string]*core{}}
	children := map[*Node][]string{}
	for _, n := range f.nodes {
		seen := map[*Node]bool{}
		for _, p := range n.parents {
			if seen[p] {
				errs = append(errs, fmt.Errorf("node %q: parent %q given twice", n.name, p.name))
			}
			seen[p] = true
			children[p] = append(children[p], n.name)
		}
	}
	if err := acyclic(f.nodes); err != nil {
		errs = append(errs, err)
	}
	for _, n := range f.nodes {
		if n.q.app != f.app {
			errs = append(errs, fmt.Errorf("node %q: queue %q is of another app", n.name, n.q.name))
			continue
		}
		err := nodeOptions(n.opts)
		var ts []rdb.NewTask
		if err == nil {
			ts, _, err = n.q.newTasks([][]byte{n.payload}, n.opts)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("node %q: %w", n.name, err))
			continue
		}
		t := ts[0]
		t.UniqueKey, t.Token = "", ""
		b.items = append(b.items, flowItem{Node: n.name, Queue: n.q.name, Task: t}) // IDs set once the flow's ID is known
		b.cores[n.q.name] = n.q
		parents := make([]string, len(n.parents))
		for i, p := range n.parents {
			parents[i] = p.name
		}
		if len(parents) == 0 {
			b.roots = append(b.roots, n.name)
		}
		b.nodes = append(b.nodes, rdb.FlowNodeDef{
			Name: n.name, Queue: n.q.name, Policy: string(n.policy), Parents: strings.Join(parents, ","),
			Children: strings.Join(children[n], ","), NParents: len(parents),
		})
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("%w: %w", ErrInvalidFlow, errors.Join(errs...))
	}
	return b, nil
}

// nodeOptions refuses the enqueue options a node cannot have.
func nodeOptions(opts []EnqueueOption) error {
	var s enqueueSettings
	for _, o := range opts {
		if o != nil {
			_ = o.applyEnqueue(&s) // its errors are newTasks'
		}
	}
	switch {
	case s.id != "":
		return errors.New("a node's task ID is its flow's: the ID option is not for nodes")
	case !s.runAt.IsZero() || s.delay > 0:
		return errors.New("a node runs when its parents have ended: Delay and At are not for nodes")
	case s.unique:
		return errors.New("Unique and UniqueKey are not for nodes")
	}
	return nil
}

// acyclic reports a cycle among nodes, naming a node on it.
func acyclic(nodes []*Node) error {
	const (
		unseen = iota
		open
		closed
	)
	mark := map[*Node]int{}
	var visit func(n *Node) *Node
	visit = func(n *Node) *Node {
		switch mark[n] {
		case open:
			return n
		case closed:
			return nil
		}
		mark[n] = open
		for _, p := range n.parents {
			if c := visit(p); c != nil {
				return c
			}
		}
		mark[n] = closed
		return nil
	}
	for _, n := range nodes {
		if c := visit(n); c != nil {
			return fmt.Errorf("the dependencies make a cycle through node %q", c.name)
		}
	}
	return nil
}
