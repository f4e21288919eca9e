package chaos

import (
	"encoding/json"
	"slices"
	"strings"

	"github.com/leatdev/leat/task"
)

// FlowsRedis is what the runner read of the flows from Redis: each flow's
// record after the drain, the node tasks' outcomes in their queues, and
// what the watcher saw of each flow the first time it found it ended.
type FlowsRedis struct {
	Records map[string]map[string]string // flow ID -> every field of its record (rdb.FlowRecord)
	Tasks   map[string]NodeTask          // node task ID -> its task's outcome
	Seen    map[string]FlowSeen          // flow ID -> the record when first seen ended
}

// NodeTask is a node's task as its queue holds it: its state and the
// nonce of its result.
type NodeTask struct {
	State, Nonce string
}

// FlowSeen is a flow's record the first time the watcher found it ended:
// its state, its end ("f", ms) and the nodes not ended then.
type FlowSeen struct {
	State, Ended string
	Open         []string
}

// SeenOf returns what the watcher notes of a flow record that has ended,
// and false for a flow not ended.
func SeenOf(rec map[string]string) (FlowSeen, bool) {
	st := task.FlowState(rec["st"])
	if !st.Final() {
		return FlowSeen{}, false
	}
	s := FlowSeen{State: string(st), Ended: rec["f"]}
	for f, v := range rec {
		if n, ok := strings.CutPrefix(f, "s:"); ok && !task.State(v).Final() {
			s.Open = append(s.Open, n)
		}
	}
	slices.Sort(s.Open)
	return s, true
}

// NonceOf returns the nonce of a node's result (JSON of Made), or "?".
func NonceOf(result []byte) string {
	var m Made
	if len(result) == 0 || json.Unmarshal(result, &m) != nil || m.Nonce == "" {
		return "?"
	}
	return m.Nonce
}

// FlowResult is the outcome of CheckFlows.
type FlowResult struct {
	Flows          int      // acknowledged submissions
	Nodes          int      // their nodes, the children added at run time included
	Added          int      // children added at run time
	NodeRuns       int      // N records: handler runs
	NodeDuplicates int      // handler runs beyond the first of a node (at-least-once, and the attempts failed on purpose)
	Failing        int      // nodes whose first attempt fails on purpose
	SinkRuns       int      // handler runs of sinks (the nodes the flows end with)
	FlowsLost      int      // flows not ended succeeded
	NodesLost      int      // nodes that never ran, or did not succeed
	Early          int      // handler runs that did not see every parent succeeded with its recorded result
	DoubleEnds     int      // flows whose end shows more than one completion
	Outcomes       int      // nodes whose success is not one run's, recorded alike in the flow and the queue
	Problems       []string // each fails the run
	Notes          []string
}

// OK reports whether no flow was lost and nothing violated.
func (r *FlowResult) OK() bool {
	return r.FlowsLost == 0 && r.NodesLost == 0 && r.Early == 0 && r.DoubleEnds == 0 && r.Outcomes == 0 && len(r.Problems) == 0
}

func (r *FlowResult) problem(format string, args ...any) { add(&r.Problems, format, args...) }

// CheckFlows verifies the flows the producer submitted (plans) against the
// workers' N records and what Redis holds:
//
//   - early: every handler run saw every parent (and each child a parent
//     added at run time) in state succeeded with the result the flow
//     recorded for it (its nonce), and nothing else: no node started
//     before all its parents had succeeded, or on a result that was not
//     its parent's final one;
//   - double ends: a flow's record shows one completion: no node left
//     (left 0, no count of parents left other than 0), and the watcher's
//     first sight of it ended had every node ended, the same state and the
//     same end time as the record after the drain (an end written again
//     changes it);
//   - lost: every flow ended succeeded and every node ran and succeeded;
//   - outcomes: each node's success is single: the result its flow
//     recorded is the one its task holds in its queue, and the result of a
//     run of that node that did not fail on purpose.
func CheckFlows(plans []FlowPlan, l *Log, rd FlowsRedis) *FlowResult {
	r := &FlowResult{Flows: len(plans), NodeRuns: len(l.NodeRuns)}
	byID := map[string]FlowPlan{}
	for _, p := range plans {
		byID[p.ID] = p
		r.Nodes += len(p.Queue)
		for _, cs := range p.Spawned {
			r.Added += len(cs)
		}
		r.Failing += len(p.Fail)
	}
	type nodeRef struct{ flow, node string }
	runs := map[nodeRef][]NodeRun{}
	for _, run := range l.NodeRuns {
		runs[nodeRef{run.Flow, run.Node}] = append(runs[nodeRef{run.Flow, run.Node}], run)
	}
	final := func(flow, node string) string {
		return NonceOf([]byte(rd.Records[flow]["r:"+node]))
	}
	// Every run saw its parents succeeded, with their final results.
	for _, run := range l.NodeRuns {
		p, ok := byID[run.Flow]
		if !ok {
			continue // a flow whose submission was not acknowledged
		}
		if _, ok := p.Queue[run.Node]; !ok {
			r.Early++
			r.problem("flow %s: node %q ran but is not in the flow", run.Flow, run.Node)
			continue
		}
		want := p.Sees(run.Node)
		bad := len(run.Saw) != len(want)
		for _, q := range want {
			s, ok := run.Saw[q]
			if !ok || s.State != string(task.Succeeded) || s.Nonce != final(run.Flow, q) {
				bad = true
			}
		}
		if bad {
			r.Early++
			r.problem("flow %s: node %q (attempt %d) saw its parents as %s; want %s each succeeded with its final result",
				run.Flow, run.Node, run.Attempt, FormatSaw(run.Saw), strings.Join(want, ","))
		}
	}
	for _, p := range plans {
		rec := rd.Records[p.ID]
		if rec["st"] != string(task.FlowSucceeded) {
			r.FlowsLost++
			r.problem("flow %s: state %q, want succeeded", p.ID, rec["st"])
		}
		for _, s := range p.Sinks() {
			r.SinkRuns += len(runs[nodeRef{p.ID, s}])
		}
		// one completion
		ends := 0
		if rec["left"] != "0" {
			ends++
			r.problem("flow %s: %q nodes left at its end, want 0", p.ID, rec["left"])
		}
		for f, v := range rec {
			if n, ok := strings.CutPrefix(f, "w:"); ok && v != "0" {
				ends++
				r.problem("flow %s: node %q has %s parents left at the flow's end, want 0", p.ID, n, v)
			}
			if n, ok := strings.CutPrefix(f, "s:"); ok {
				if _, known := p.Queue[n]; !known {
					ends++
					r.problem("flow %s: its record has a node %q it was not given", p.ID, n)
				}
			}
		}
		if seen, ok := rd.Seen[p.ID]; ok {
			if len(seen.Open) > 0 {
				ends++
				r.problem("flow %s: seen %s with nodes %v not ended", p.ID, seen.State, seen.Open)
			}
			if seen.State != rec["st"] || seen.Ended != rec["f"] {
				ends++
				r.problem("flow %s: seen ended %s at %s, then its record says %s at %s: it ended again",
					p.ID, seen.State, seen.Ended, rec["st"], rec["f"])
			}
		}
		if ends > 0 {
			r.DoubleEnds++
		}
		// every node ran and succeeded, once
		for _, n := range p.Nodes() {
			rs := runs[nodeRef{p.ID, n}]
			if len(rs) > 1 {
				r.NodeDuplicates += len(rs) - 1
			}
			if len(rs) == 0 || rec["s:"+n] != string(task.Succeeded) {
				r.NodesLost++
				r.problem("flow %s: node %q ran %d times, state %q in the flow", p.ID, n, len(rs), rec["s:"+n])
				continue
			}
			nonce := final(p.ID, n)
			tk := rd.Tasks[task.FlowTaskID(p.ID, n)]
			// the result of a run that did not fail on purpose
			ran := slices.ContainsFunc(rs, func(run NodeRun) bool { return run.Nonce == nonce && run.Attempt > p.Fail[n] })
			if tk.State != string(task.Succeeded) || tk.Nonce != nonce || !ran {
				r.Outcomes++
				r.problem("flow %s: node %q succeeded with result %s in the flow, its task %s with %s (a run's: %v)",
					p.ID, n, nonce, tk.State, tk.Nonce, ran)
			}
		}
	}
	return r
}
