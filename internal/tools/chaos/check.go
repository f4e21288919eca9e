package chaos

import (
	"cmp"
	"fmt"
	"slices"
)

// Sends is what the producer knows of its sends, per key: Acked is the
// highest sequence number whose send was acknowledged (every lower one
// was too); Tried is the highest it tried to send, which is Acked or,
// when the run ended during a failing send, Acked+1 (that send may have
// reached Redis or not).
type Sends struct {
	Acked map[string]int64
	Tried map[string]int64
}

// Result is the outcome of Check.
type Result struct {
	Events         int64    // acknowledged sends
	Processed      int      // E records (handed to the processor), duplicates included
	Duplicates     int      // E records beyond the first of their key and sequence number
	Lost           int64    // acknowledged sends with no applied commit
	Order          int      // inversions in a key's processed order, duplicates removed
	Phantoms       int      // records of events never sent
	Fencing        int      // applied commits with a token lower than an earlier one of the partition
	Commits        int      // entries in the partitions' commit logs
	Refused        int      // commits refused because the token was superseded (ErrNotOwner)
	Abandoned      int      // commits given up because the partition's work had ended
	Late           int      // redeliveries handed out after a newer event of their key (allowed by at-least-once)
	Resent         int      // duplicates that are another entry of their event: the producer sent a batch again after it failed part way
	State          int      // keys whose committed state is not their last sequence number (after a late duplicate)
	Tasks          int      // acknowledged enqueues
	TaskRuns       int      // successful handler runs
	TaskDuplicates int      // successful runs beyond the first of a task
	TasksLost      int      // acknowledged tasks without a successful run or not in state succeeded
	Tables         int      // keys whose tally (a table's value) shows an event applied twice, skipped or missing
	Problems       []string // losses and violations: each fails the run
	Notes          []string // what at-least-once delivery allows but is worth a look
}

// OK reports whether nothing was lost and nothing violated.
func (r *Result) OK() bool {
	return r.Lost == 0 && r.Order == 0 && r.Phantoms == 0 && r.Fencing == 0 && r.TasksLost == 0 && r.Tables == 0 && len(r.Problems) == 0
}

const maxProblems = 20

func (r *Result) problem(format string, args ...any) { add(&r.Problems, format, args...) }

func (r *Result) note(format string, args ...any) { add(&r.Notes, format, args...) }

func add(list *[]string, format string, args ...any) {
	if len(*list) < maxProblems {
		*list = append(*list, fmt.Sprintf(format, args...))
	} else if len(*list) == maxProblems {
		*list = append(*list, "(more not shown)")
	}
}

// Redis is what the runner read from Redis after the drain.
type Redis struct {
	CommitLogs map[int][]int64   // partition -> tokens of the applied commits, in commit order
	State      map[string]int64  // key -> last committed sequence number
	TaskStates map[string]string // acknowledged task ID -> its state
	Tallies    map[string]Tally  // key -> its tally in the tally processor's table
}

// Check verifies the run: every acknowledged send was committed at least
// once; per key, the processed order with duplicates removed is the send
// order; per partition, the tokens of applied commits never go down (in
// the commit log in Redis and in the workers' C records, which must agree
// with it); every acknowledged task ran to success at least once and is in
// state succeeded. It also counts late duplicates and keys whose committed
// state is not their last sequence number, which at-least-once delivery
// allows.
func Check(sends Sends, tasks []string, l *Log, rd Redis) *Result {
	r := &Result{Processed: len(l.Processed), Refused: l.Refused, Abandoned: l.Abandoned, Tasks: len(tasks)}
	for _, n := range sends.Acked {
		r.Events += n
	}
	checkOrder(r, sends, l)
	checkFencing(r, l, rd)
	checkState(r, sends, rd)
	checkTasks(r, tasks, l, rd)
	checkTallies(r, sends, rd)
	return r
}

// checkTallies verifies the tally processor's table: each key's tally
// applied every acknowledged event (Last), none it was not sent (Tried),
// no entry twice (Again) and no sequence number skipped (Gaps).
func checkTallies(r *Result, sends Sends, rd Redis) {
	for key, acked := range sends.Acked {
		t := rd.Tallies[key]
		switch {
		case t.Again > 0:
			r.Tables++
			r.problem("key %q: tally applied %d entries a second time", key, t.Again)
		case t.Gaps > 0:
			r.Tables++
			r.problem("key %q: tally skipped %d sequence numbers (acknowledged without their write)", key, t.Gaps)
		case t.Last < acked || t.Last > sends.Tried[key]:
			r.Tables++
			r.problem("key %q: tally at %d, %d sent", key, t.Last, acked)
		}
	}
}

// checkOrder counts duplicates, losses and order inversions. The processed
// order of a key is the order of its partition's owners (fencing tokens
// grow from one owner to the next) and, within one owner, the order of its
// records.
func checkOrder(r *Result, sends Sends, l *Log) {
	byKey := map[string][]Processed{}
	for _, p := range l.Processed {
		byKey[p.Key] = append(byKey[p.Key], p)
	}
	committed := map[string]map[int64]bool{}
	for _, c := range l.Commits {
		if committed[c.Key] == nil {
			committed[c.Key] = map[int64]bool{}
		}
		committed[c.Key][c.Seq] = true
	}
	for key, ps := range byKey {
		if _, ok := sends.Tried[key]; !ok {
			r.Phantoms += len(ps)
			r.problem("key %q was processed but never sent", key)
			continue
		}
		slices.SortStableFunc(ps, func(a, b Processed) int {
			return cmp.Or(cmp.Compare(a.Token, b.Token), cmp.Compare(a.Source, b.Source), cmp.Compare(a.Line, b.Line))
		})
		seen := map[int64]bool{}
		entries := map[int64][]string{} // the entries of each sequence number seen
		var last int64
		for _, p := range ps {
			resent := seen[p.Seq] && !slices.Contains(entries[p.Seq], p.Entry)
			if !slices.Contains(entries[p.Seq], p.Entry) {
				entries[p.Seq] = append(entries[p.Seq], p.Entry)
			}
			if seen[p.Seq] {
				r.Duplicates++
				if resent {
					r.Resent++
				} else if p.Seq < last {
					r.Late++
					r.note("key %q: %d handed out again (token %d) after %d", key, p.Seq, p.Token, last)
				}
				continue
			}
			seen[p.Seq] = true
			if p.Seq < 1 || p.Seq > sends.Tried[key] {
				r.Phantoms++
				r.problem("key %q: sequence number %d was processed but never sent", key, p.Seq)
				continue
			}
			if p.Seq < last {
				r.Order++
				r.problem("key %q: %d processed after %d (token %d)", key, p.Seq, last, p.Token)
			}
			last = max(last, p.Seq)
		}
	}
	for key, acked := range sends.Acked {
		for seq := int64(1); seq <= acked; seq++ {
			if !committed[key][seq] {
				r.Lost++
				r.problem("key %q: acknowledged send %d was never committed", key, seq)
			}
		}
	}
}

// checkFencing verifies the partitions' commit logs and the workers'
// records of applied commits against them.
func checkFencing(r *Result, l *Log, rd Redis) {
	for p, log := range rd.CommitLogs {
		r.Commits += len(log)
		var top int64
		for i, tok := range log {
			if tok < top {
				r.Fencing++
				r.problem("partition %d: commit %d applied with token %d after token %d", p, i+1, tok, top)
			}
			top = max(top, tok)
		}
	}
	byPart := map[int][]Commit{}
	for _, c := range l.Commits {
		byPart[c.Partition] = append(byPart[c.Partition], c)
		log := rd.CommitLogs[c.Partition]
		if c.N < 1 || c.N > int64(len(log)) || log[c.N-1] != c.Token {
			r.Fencing++
			r.problem("partition %d: a worker's commit %d with token %d is not in the commit log", c.Partition, c.N, c.Token)
		}
	}
	for p, cs := range byPart {
		slices.SortFunc(cs, func(a, b Commit) int { return cmp.Compare(a.N, b.N) })
		var top int64
		for _, c := range cs {
			if c.Token < top {
				r.Fencing++
				r.problem("partition %d: worker recorded commit %d with token %d after token %d", p, c.N, c.Token, top)
			}
			top = max(top, c.Token)
		}
	}
}

// checkState compares each key's committed state with the last sequence
// number sent (or tried, when the last send's outcome is unknown). The
// processor sets the state to the sequence number of each event it
// commits, so a late duplicate (an event handed out again after newer
// ones, which at-least-once delivery allows) sets it back: that is noted,
// not failed.
func checkState(r *Result, sends Sends, rd Redis) {
	for key, acked := range sends.Acked {
		got, tried := rd.State[key], sends.Tried[key]
		if got != acked && got != tried {
			r.State++
			r.note("key %q: committed state %d, last sent %d", key, got, acked)
		}
	}
}

// checkTasks verifies that every acknowledged task succeeded.
func checkTasks(r *Result, tasks []string, l *Log, rd Redis) {
	for _, n := range l.Tasks {
		r.TaskRuns += n
		r.TaskDuplicates += n - 1
	}
	for _, id := range tasks {
		ran := l.Tasks[id] > 0
		state := rd.TaskStates[id]
		if !ran || state != "succeeded" {
			r.TasksLost++
			r.problem("task %s: %d successful runs recorded, state %q", id, l.Tasks[id], state)
		}
	}
}
