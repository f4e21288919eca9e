package chaos

import (
	"strings"

	"github.com/leatdev/leat/task"
)

// The runner's flow queues: the producer submits flows whose nodes are
// tasks of either, and the workers handle both with the same handler.
var FlowQueues = []string{"steps-a", "steps-b"}

// FlowQueueOptions are the options of the flow queues: those of the chore
// queue (a node of a killed or stalled worker is handed out again after
// Visibility), with fewer slots each.
func FlowQueueOptions() []task.Option {
	return append(QueueOptions(), task.Concurrency(3))
}

// Step is the payload of a flow node's task: the children its handler adds
// at run time (task.AddChild), none for most nodes, and how many of its
// first attempts fail on purpose (retried after the queue's backoff).
type Step struct {
	Spawn []Spawn `json:"spawn,omitempty"`
	Fail  int     `json:"fail,omitempty"`
}

// Spawn is a child a node adds at run time: its name, queue and how many
// of its first attempts fail on purpose.
type Spawn struct {
	Name  string `json:"name"`
	Queue string `json:"queue"`
	Fail  int    `json:"fail,omitempty"`
}

// Made is a flow node's result. Nonce is unique to the handler run that
// returned it (the worker's ID and a counter of its runs), so that the
// checker can tell which run's result the flow recorded and which one a
// child saw.
type Made struct {
	Node  string `json:"node"`
	Nonce string `json:"nonce"`
}

// FlowNodeOf returns the flow and node of a flow node's task ID
// (task.FlowTaskID).
func FlowNodeOf(taskID string) (flow, node string, ok bool) {
	rest, ok := strings.CutPrefix(taskID, task.FlowIDPrefix)
	if !ok {
		return "", "", false
	}
	i := strings.LastIndexByte(rest, ':')
	if i <= 0 || i == len(rest)-1 {
		return "", "", false
	}
	return rest[:i], rest[i+1:], true
}

// FlowPlan is a flow as the producer submitted it: each node's queue and
// parents, and the children each node adds at run time.
type FlowPlan struct {
	ID      string
	Queue   map[string]string   // node -> queue (added children included)
	Parents map[string][]string // node -> its parents (none for roots and added children)
	Spawned map[string][]string // node -> the children it adds at run time
	Fail    map[string]int      // node -> how many of its first attempts fail on purpose
}

// Nodes returns every node of p, added children included.
func (p FlowPlan) Nodes() []string {
	out := make([]string, 0, len(p.Queue))
	for n := range p.Queue {
		out = append(out, n)
	}
	return out
}

// Sees returns the parents node's handler must see: its parents and the
// children each of them added at run time.
func (p FlowPlan) Sees(node string) []string {
	var out []string
	for _, q := range p.Parents[node] {
		out = append(out, q)
		out = append(out, p.Spawned[q]...)
	}
	return out
}

// Sinks returns the nodes of p that are no node's parent and were not
// added at run time: the flow ends with them.
func (p FlowPlan) Sinks() []string {
	parent := map[string]bool{}
	for _, ps := range p.Parents {
		for _, q := range ps {
			parent[q] = true
		}
	}
	added := map[string]bool{}
	for _, cs := range p.Spawned {
		for _, c := range cs {
			added[c] = true
		}
	}
	var out []string
	for n := range p.Queue {
		if !parent[n] && !added[n] {
			out = append(out, n)
		}
	}
	return out
}
