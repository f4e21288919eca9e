// Package chaos is leat's fault-injection runner: TestChaos starts a
// persistent redis-server, several worker processes (the program in
// chaosworker) running two stream processors (one of them keeping a table),
// one task queue and two flow queues, and a producer of events, tasks and
// flows; it kills, stalls and cuts off
// workers, loses their replies, starts new ones and restarts Redis, at
// random moments from a printed seed; after a drain it
// checks, from the records the workers wrote, that nothing acknowledged was
// lost, that each key was processed in send order, that no write went
// through a superseded fencing token, that the table applied every event
// once, that every task succeeded, and that every flow succeeded once,
// each node run only after its parents succeeded, on their final results.
//
// The test runs only when LEAT_CHAOS_DURATION is set (scripts/test runs two
// minutes of it on its own); see docs/chaos.md for the faults, the checks
// and the published figures.
//
// # Records
//
// A worker appends one line per step to its own file, written (to the
// kernel, so a SIGKILL does not lose it) before the step's loop body or
// handler returns, so that whatever leat acknowledged was recorded:
//
//	E partition token key seq entry-id deliveries   an event handed to the processor
//	C partition token n key seq                     its fenced commit was applied, as the n-th of the partition
//	R partition token key seq reason                its fenced commit was not applied: refused
//	                                                (not-owner) or given up as the partition's work ended (ended)
//	S partition token key seq                       the worker stops itself here (SIGSTOP) on request
//	S flow flow node attempt                        the same, in the middle of a flow node's run
//	T task-id n                                     a task handler ran to success
//	N flow node attempt nonce parents               a flow node's handler ran: the nonce of the
//	                                                result it returns (unique to the run), and
//	                                                what it saw of its parents, "-" for none or
//	                                                parent/state/nonce,... (Task.Parents)
//
// The fenced commit appends the token to the partition's commit log
// (a list under Events.LocalKey) and sets the key's last sequence number
// in the partition's state hash, in one transaction that Redis applies
// only while the lock acquisition of the token still holds.
//
// The processor "tally" keeps no records: its table (Tally, per key) is
// read from Redis after the drain.
package chaos
