package rdb

// Flow keys. A flow's own keys share the hash tag {app:flow:ID}, so its
// scripts touch one slot, which is usually not the slot of any of its
// nodes' queues; the two indexes of an app's flows share the app's tag.
// A flow's node tasks are ordinary tasks of their queues (keys_task.go).

func (s KeySpace) flowTag(id string) string { return s.App + ":flow:" + id }

// Flow is the hash of a flow's record (no TTL while it is submitting or
// running; its retention once it ended): fields "st" (submitting, running,
// succeeded, failed, cancelled), "c" created ms, "f" ended ms, "ret"
// retention ms, "n" nodes, "left" nodes not ended, "at" the last change
// ms, "why" the node that failed the flow; per node N: "q:N" queue, "s:N"
// state (waiting, queued, succeeded, failed, dead, cancelled), "w:N"
// parents not yet ended, "p:N" and "c:N" its parents and children
// (comma-separated), "o:N" its failure policy, "r:N" its result, "e:N" its
// error; for a child added at run time "sp:N" the node that added it and
// "t:N" its task (JSON), and on that node "k:N" the children it added
// not yet ended and "sc:N" those it added (comma-separated).
func (s KeySpace) Flow(id string) string { return s.key("flow", s.flowTag(id)) }

// FlowDef is the definition of a flow's node tasks as submitted (a JSON
// string: every node's queue and task), from which a submission a
// producer left half done is finished; TTL as the flow's record.
func (s KeySpace) FlowDef(id string) string { return s.key("fdef", s.flowTag(id)) }

// FlowRelease is the set of a flow's nodes marked queued whose tasks were
// maybe not released yet (waiting -> pending in their queues): a member
// leaves once its release is done. Redis deletes it when empty.
func (s KeySpace) FlowRelease(id string) string { return s.key("frel", s.flowTag(id)) }

// FlowCancel is the set of a flow's nodes whose tasks are to be cancelled
// (the flow failed or was cancelled): a member leaves once its
// cancellation is done. Redis deletes it when empty.
func (s KeySpace) FlowCancel(id string) string { return s.key("fcan", s.flowTag(id)) }

// FlowRevive is the set of a flow's nodes whose tasks, cancelled by the
// flow's failure, are to be revived (cancelled -> waiting) because the
// node that failed it was requeued and succeeded: a member leaves once
// revived. Redis deletes it when empty.
func (s KeySpace) FlowRevive(id string) string { return s.key("frev", s.flowTag(id)) }

// FlowsLive is the sorted set of the app's flows being submitted or
// running, or ended with work left (a release or a cancellation): member =
// flow ID, score = created ms (no TTL; the sweep moves ended flows to
// FlowsDone).
func (s KeySpace) FlowsLive() string { return s.key("flive", s.appTag()) }

// FlowsDone is the sorted set of the app's ended flows: member = flow ID,
// score = end of its retention in Unix ms (members leave then).
func (s KeySpace) FlowsDone() string { return s.key("fdone", s.appTag()) }

// FlowLease is the lease of the leader-side work of the app's flows.
const FlowLease = "task-flows"
