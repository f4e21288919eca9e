// Package executor holds the types of the processor runtime that users
// configure and observe: Options (lock expiry, prefetch, grace period, start
// position, retries and the failure policy), the Hook interfaces that
// metrics implement, the errors a processor returns or meets, the fields of
// a dead letter, and Executor, the view of a running processor that
// app.App.Executors lists. The app package runs one executor per processor;
// the machinery behind it is internal. This documentation says what the
// runtime does with these settings; docs/concepts.md tells the whole story.
//
// Each partition of a processor's stream is owned by one executor at a
// time, under a lock of LockExpiry that the owner refreshes three times per
// expiry. The owner trusts its lock until LockExpiry minus a margin
// (LockExpiry/100 + min(LockExpiry/10, 500ms)) after the start of its last
// successful refresh, and the processor's context ends at that moment,
// whatever the network does: a processor that honours its context stops
// before another owner can start.
//
// # Failure policies
//
// When the processor returns an error, the events handed out and not
// acknowledged are the failing ones. When the error is a transient Redis
// error (stream.IsTransient), Transient
// retries them in place first, for up to 30s by default, without counting
// them as Retry attempts and only while the partition is trusted. Retry
// retries them in place, with
// exponential backoff and jitter, so order holds; then OnError applies:
// Halt, Quarantine, Ignore or DeadLetter. Halt and Quarantine record a report
// in the processor's quarantine hash. A halt does not cascade: an executor
// that acquires a partition halted after it started holds the partition
// without processing it, since it runs the code that just failed; executors
// started later try it again. Entries the processor cannot be
// given (undecodable, trimmed from the stream before they were acknowledged)
// go straight to OnError. A panic in the processor is recovered and handled
// as an error carrying its stack.
// # Fencing tokens and fenced writes
//
// Each acquisition of a partition lock also increments the partition's
// fencing counter (same hash slot, same script) and hands the processor its
// value: the Token of the partition's stream.Events. Tokens grow strictly from one owner to the
// next (and keep growing if Redis lost the counter, see internal/lease), so
// a store that keeps the highest token it saw and refuses lower ones cannot
// be written by an owner that resumed after its successor started.
// The Events' Fenced does this for Redis itself: the processor's commands
// run in a MULTI/EXEC transaction that Redis applies only while the lock
// still holds this acquisition's value (WATCH, GET, MULTI, EXEC), else
// stream.ErrNotOwner, and the partition's work ends.
//
// What remains the processor's job: return when its context ends (a
// processor that keeps running after its lock was lost can overlap with the
// next owner, for as long as it runs; Run gives up on it after Grace plus
// min(max(Grace, 1s), 10s), returning ErrProcessorStuck); write through
// Fenced, or carry the token to external stores, for writes that must not
// land late; be idempotent, since delivery is at least once.
//
// The admin lock (rebalancing) is taken with a fresh random token too, and
// the assignment is written by a script that checks the admin lock's value
// and the version it was computed from (compare-and-set), so a rebalancer
// that stalled while holding the admin lock cannot overwrite a newer
// assignment.
//
// # Shutdown
//
// Run returns after this sequence: stop the heartbeat and wait for it (so a
// heartbeat in flight cannot add the executor back after it left); leave
// the membership and store the survivors' assignment (they start taking the
// partitions over at once); stop the control listener; stop handing out
// events; let each consumer finish its event or batch in flight within
// Grace, then cancel it and wait a bounded while more (a processor still
// running then is abandoned: Run returns ErrProcessorStuck and its entries
// stay pending); acknowledge; release the locks; stop refreshing, fetching
// and acking.
//
// Each executor is a consumer of the group under its own ID, fresh on every
// run. On releasing a partition, after acknowledging, it deletes its consumer
// there if nothing is pending; the app's leader, every
// minute, deletes the consumers of executors that are not live members once
// their pending entries were claimed. A script checks the pending count and
// deletes in one step, so no pending entry is lost with a consumer.
package executor
