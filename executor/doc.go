// Package executor runs one processor on one worker: membership, partition
// locks, fetching, consumers, heartbeats, rebalancing and the failure
// policies. The app package starts one Executor per processor.
//
// # Pieces
//
// An Executor owns these goroutines, and waits for all of them:
//
//   - heartbeat: refreshes its deadline in the processor's members sorted set
//     every min(LockExpiry/3, 1s) and finds members whose deadline passed;
//   - listen: reads the processor's control stream (join, leave, dead and
//     assigned notices) from the last ID it saw, never "$";
//   - fetcher: one goroutine reading every owned partition into a bounded
//     buffer of Prefetch events, a partition again once its buffer is half
//     empty, several partitions per round trip;
//   - acker: XACKs of every partition, flushed every few milliseconds in one
//     pipelined round trip;
//   - per owned partition: a lock refresher and a consumer calling the
//     processor, so a slow partition never stalls the others.
//
// # Rebalancing
//
// The assignment (which executor owns which partition) is computed by
// rebalance.Assign under the processor's admin lock from the live members and
// the previous assignment, so only partitions that must move, move. It is
// stored with a version and announced on the control stream; every executor
// also checks it every LockExpiry/2, so a lost notice delays nothing for
// long. An executor releases the partitions it no longer has and acquires
// the new ones; partitions it keeps never pause.
//
// A partition changes hands like this:
//
//	old owner                          new owner
//	stop handing out events            try the lock every LockExpiry/20
//	finish the event in flight           (at most 250ms)
//	  (at most Grace, then cancel)
//	acknowledge, release the lock  ->  lock obtained
//	                                   take over the group's pending
//	                                     entries (XAUTOCLAIM), in order
//	                                   then read new entries
//
// After a crash the lock is not released: it expires LockExpiry after its
// last refresh, and the dead executor's heartbeat expires as fast; a
// survivor notices at its next heartbeat and rebalances, and the new owner's
// next lock attempt succeeds. The partition resumes at most LockExpiry +
// min(LockExpiry/3, 1s) + min(LockExpiry/20, 250ms) after the crash, plus
// round trips: 11.25s with the default 10s expiry.
//
// # Lock arithmetic
//
// A partition lock is a key holding the executor ID, with TTL LockExpiry,
// refreshed every LockExpiry/3. The executor trusts the lock until
//
//	start of the last successful refresh + LockExpiry - margin
//	margin = LockExpiry/100 + min(LockExpiry/10, 500ms)
//
// The TTL counts from when Redis ran the refresh, which is after it was
// sent, so the trust window ends before the key can expire; the margin
// covers clock rate differences (1%) and the delay between checking trust
// and handing an event out. Events are only handed to the processor while
// the lock is trusted. When a refresh finds the lock gone, or trust runs out
// because refreshes keep failing, the partition's context is cancelled: the
// processor must return, no further event is handed out, and its buffered
// events are dropped (they stay pending in Redis for the next owner).
//
// Reads are fenced: entries enter the consumer group's pending list only for
// the holder of the lock, checked by Redis in the same atomic step (an
// optimistic transaction watching the lock keys, or a script on Cluster).
// An executor that stalled past its lock expiry (a long GC pause, SIGSTOP)
// therefore never takes entries meant for the new owner, and two executors
// never process one partition at the same time as long as the processor
// honours its context. A stalled executor that finds itself reaped joins
// again instead of failing.
//
// # Shutdown
//
// Run returns after this sequence: stop the membership goroutines; leave
// the membership and store the survivors' assignment (they start taking the
// partitions over at once); stop handing out events; let each consumer
// finish its event or batch in flight within Grace; acknowledge; release the
// locks; stop fetching and acking.
//
// Each executor is a consumer of the group under its own ID, fresh on every
// run. On releasing a partition, after acknowledging, it deletes its consumer
// there if nothing is pending; CleanConsumers, run by the app's leader every
// minute, deletes the consumers of executors that are not live members once
// their pending entries were claimed. A script checks the pending count and
// deletes in one step, so no pending entry is lost with a consumer.
//
// # Failure policies
//
// When the processor returns an error, the events handed out and not
// acknowledged are the failing ones. Retry retries them in place, with
// exponential backoff and jitter, so order holds; then OnError applies:
// Halt, Quarantine, Ignore or DeadLetter. Halt and Quarantine record a report
// in the processor's quarantine hash. A halt does not cascade: an executor
// that acquires a partition halted after it started holds the partition
// without processing it, since it runs the code that just failed; executors
// started later try it again. Entries the processor cannot be
// given (undecodable, trimmed from the stream before they were acknowledged)
// go straight to OnError. A panic in the processor is recovered and handled
// as an error carrying its stack.
package executor
