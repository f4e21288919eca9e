package cmd

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/leatdev/leat/task"
)

// showLayerMax is the most nodes "flows show" prints of a layer without
// --all: those not succeeded first, then a line that counts the others.
const showLayerMax = 20

// drawFlow prints a flow as a layered graph: its state, the count of its
// nodes by state, then a block per depth (the longest path from a root;
// a node added at run time counts the node that added it as a parent),
// each node on a line with its queue, its state and its parents. A layer
// of more than showLayerMax nodes is cut to those unless all.
func drawFlow(w io.Writer, in *task.FlowInfo, all bool) {
	fmt.Fprintf(w, "flow %s %s, %d nodes, created %s", quoteTerm(in.ID), in.State, len(in.Nodes), in.CreatedAt.Format(time.RFC3339))
	if !in.FinishedAt.IsZero() {
		fmt.Fprintf(w, ", ended %s", in.FinishedAt.Format(time.RFC3339))
	}
	if in.FailedBy != "" {
		fmt.Fprintf(w, ", failed by %s", quoteTerm(in.FailedBy))
	}
	fmt.Fprintln(w)
	if len(in.Nodes) == 0 {
		return
	}
	fmt.Fprintln(w, "nodes: "+countStates(in.Nodes))

	parents := func(n task.FlowNodeInfo) []string {
		if len(n.Parents) == 0 && n.SpawnedBy != "" {
			return []string{n.SpawnedBy}
		}
		return n.Parents
	}
	by := map[string]task.FlowNodeInfo{}
	for _, n := range in.Nodes {
		by[n.Name] = n
	}
	depth := map[string]int{}
	var of func(string, int) int
	of = func(name string, guard int) int {
		if d, ok := depth[name]; ok || guard > len(in.Nodes) {
			return d
		}
		d := 0
		for _, p := range parents(by[name]) {
			if _, ok := by[p]; ok {
				d = max(d, of(p, guard+1)+1)
			}
		}
		depth[name] = d
		return d
	}
	var layers [][]task.FlowNodeInfo
	for _, n := range in.Nodes { // parents before children, by name within a depth
		d := of(n.Name, 0)
		for len(layers) <= d {
			layers = append(layers, nil)
		}
		layers[d] = append(layers[d], n)
	}
	var nameW, queueW, stateW int
	for _, n := range in.Nodes {
		nameW = max(nameW, len(quoteTerm(n.Name)))
		queueW = max(queueW, len(quoteTerm(n.Queue)))
		stateW = max(stateW, len(nodeState(n)))
	}
	for d, layer := range layers {
		fmt.Fprintf(w, "\ndepth %d: %d %s\n", d, len(layer), plural(len(layer), "node"))
		shown, hidden := layer, []task.FlowNodeInfo(nil)
		if !all && len(layer) > showLayerMax {
			sorted := append([]task.FlowNodeInfo(nil), layer...)
			sort.SliceStable(sorted, func(i, j int) bool {
				return sorted[i].State != task.Succeeded && sorted[j].State == task.Succeeded
			})
			keep := map[string]bool{}
			for _, n := range sorted[:showLayerMax] {
				keep[n.Name] = true
			}
			shown, hidden = nil, nil
			for _, n := range layer {
				if keep[n.Name] {
					shown = append(shown, n)
				} else {
					hidden = append(hidden, n)
				}
			}
		}
		for _, n := range shown {
			line := fmt.Sprintf("  %-*s  %-*s  %-*s", nameW, quoteTerm(n.Name), queueW, quoteTerm(n.Queue), stateW, nodeState(n))
			switch {
			case len(n.Parents) > 0:
				ps := make([]string, len(n.Parents))
				for i, p := range n.Parents {
					ps[i] = quoteTerm(p)
				}
				line += "  <- " + strings.Join(ps, ", ")
			case n.SpawnedBy != "":
				line += "  <- " + quoteTerm(n.SpawnedBy) + " (added at run time)"
			}
			fmt.Fprintln(w, strings.TrimRight(line, " "))
		}
		if len(hidden) > 0 {
			fmt.Fprintf(w, "  ... and %d more: %s (--all prints them)\n", len(hidden), countStates(hidden))
		}
	}
}

// nodeState is a node's state, with its failure policy when not FailFlow.
func nodeState(n task.FlowNodeInfo) string {
	s := string(n.State)
	if n.OnFailure != task.FailFlow && n.OnFailure != "" {
		s += " (on failure: " + string(n.OnFailure) + ")"
	}
	return quoteTerm(s)
}

// countStates counts nodes by state, the most frequent first: "3
// succeeded, 1 active".
func countStates(nodes []task.FlowNodeInfo) string {
	counts := map[task.State]int{}
	for _, n := range nodes {
		counts[n.State]++
	}
	states := make([]task.State, 0, len(counts))
	for s := range counts {
		states = append(states, s)
	}
	sort.Slice(states, func(i, j int) bool {
		if counts[states[i]] != counts[states[j]] {
			return counts[states[i]] > counts[states[j]]
		}
		return states[i] < states[j]
	})
	parts := make([]string, len(states))
	for i, s := range states {
		parts[i] = fmt.Sprintf("%d %s", counts[s], quoteTerm(string(s)))
	}
	return strings.Join(parts, ", ")
}
