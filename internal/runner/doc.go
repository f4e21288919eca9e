// Package runner runs one processor on one worker: membership, partition
// locks, fetching, consumers, heartbeats, rebalancing and the failure
// policies. The app package starts one Executor per processor; the types a
// user configures it with (options, policies, hooks, errors) are in the
// public package executor, whose documentation says what the runtime
// promises.
//
// # Pieces
//
// An executor runs its commands on clients of its own with fixed pools
// (connections.go), so a worker's connections do not grow with its
// partitions or with the application pool's size. It owns these
// goroutines, and waits for all of them:
//
//   - heartbeat: refreshes its deadline in the processor's members sorted set
//     every min(LockExpiry/3, 1s) and finds members whose deadline passed;
//   - listen: reads the processor's control stream (join, leave, dead,
//     assigned and released notices) from the last ID it saw, never "$";
//   - fetcher: one goroutine reading every owned partition into a bounded
//     buffer of Prefetch events, a partition again once its buffer is half
//     empty, several partitions per round trip;
//   - acker: XACKs of every partition, flushed every few milliseconds in one
//     pipelined round trip;
//   - refresher: extends the locks of every owned partition together, with
//     one script that reports the locks lost (lock.go);
//   - trim checker: looks for entries trimmed before they were read, every
//     few heartbeat periods, with one script reading every partition's
//     counters (trim.go);
//   - per owned partition: a goroutine that acquires, drains and releases it,
//     and a consumer calling the processor, so a slow partition never
//     stalls the others.
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
//	stop handing out events            try the lock: held (its TTL comes
//	finish the event in flight           back with the failure); wait
//	  (at most Grace, then cancel)
//	acknowledge, release the lock,
//	announce "released" on the    ->  woken by the notice: lock obtained
//	  control stream
//	                                   take over the group's pending
//	                                     entries (XAUTOCLAIM), in order
//	                                   then read new entries
//
// The new owner tries again when the notice arrives, when the lock's TTL
// runs out, or after LockExpiry/4 in case a notice was missed, whichever is
// first; Redis gives the lock only once it was released or expired, so a
// partition never has two holders. A graceful hand-over therefore pauses
// the partition for the old owner's drain plus a few round trips.
//
// After a crash the lock is not released: it expires LockExpiry after its
// last refresh, and the dead executor's heartbeat expires as fast; a
// survivor notices at its next heartbeat and rebalances, and the new owner's
// first attempt succeeds (or, if the lock still has TTL left, the attempt
// after it, timed by that TTL). The partition resumes at most LockExpiry +
// min(LockExpiry/3, 1s) after the crash, plus round trips: 11s with the
// default 10s expiry.
//
// # Lock arithmetic
//
// A partition lock is a key holding a random token drawn at each
// acquisition, followed by the executor's ID and worker name (for logs and
// inspect); refreshes, releases and fenced reads and writes compare the
// whole value, so no other acquisition, even one with the same identity, can
// pass for this one. Its TTL is LockExpiry; one refresher per executor
// extends all its locks together every LockExpiry/3, in one round trip: one
// script call on a single server (up to 1,000 locks a call), one per lock,
// pipelined, on Cluster, where each partition has its own hash slot. The
// executor trusts a lock until
//
//	start of the last successful acquisition or refresh + LockExpiry - margin
//	margin = LockExpiry/100 + min(LockExpiry/10, 500ms)
//
// The TTL counts from when Redis ran the command, which is after it was
// sent, so trust ends before the key can expire; the margin covers clock
// rate differences (1%) and the delay between checking trust and handing an
// event out. Every refresh attempt is bounded by the trust that remains, on
// a client of its own whose socket deadlines follow the context, so a frozen
// network cannot hold an attempt past it.
//
// The processor's context is the partition's trust (internal/lease.Trust):
// its Deadline is the end of trust, a timer cancels it at that moment
// whatever the network does, and its Err and Done read the clock themselves,
// so a processor that checks ctx.Err() right after its process resumed from
// a freeze longer than LockExpiry (SIGSTOP, a long GC pause) already sees it
// cancelled. It is also cancelled when a refresh or a fenced read finds the
// lock gone, on a release after Grace, and when the worker stops. Once
// cancelled, no further event is handed out, and the buffered events are
// dropped (they stay pending in Redis for the next owner). Contexts derived
// from it end through the timer, a few microseconds later.
//
// Reads are fenced: entries enter the consumer group's pending list only for
// the holder of the lock, checked by Redis in the same atomic step (an
// optimistic transaction watching the lock keys, or a script on Cluster).
// An executor that stalled past its lock expiry therefore never takes
// entries meant for the new owner. A stalled executor that finds itself
// reaped joins again instead of failing.
package runner
