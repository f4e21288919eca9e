// Package inspect reads the state of a leat app from Redis, for the "leat
// inspect" command, dashboards and metrics: its streams, their partitions,
// what each processor has done with each partition (owner, lag, pending,
// quarantine), its leader, its workers, its task queues (tasks per state,
// oldest ready and delivered entries, throughput), and the values of keys in
// processors' tables.
//
// # Cost
//
// Every figure comes from a command that costs O(1) per key, sent in one
// pipelined round trip per kind: XINFO STREAM (without FULL) and XINFO
// GROUPS per partition, XPENDING in its summary form, GET of the partition
// locks, ZRANGE of the members, GET of the assignment and HGETALL of the
// registries and stop reports. Reading a stream costs O(partitions ×
// processors) commands, whatever the length of the streams.
//
// A task queue costs O(priority levels) commands, whatever its number of
// tasks: HGETALL of its counters of tasks per state, XINFO GROUPS, XPENDING
// (summary form) and XINFO CONSUMERS (O(workers): its workers, what each
// runs and when Redis last saw it) per level, then XRANGE from the group's last
// delivered ID with COUNT 1 (O(log N)) for the oldest ready entry, and one
// MGET of the finished-task counters (at most 31 keys) that the scripts
// ending tasks keep per 10-second bucket. All the queues of an app are read
// in the same two round trips.
//
// [Inspector.TableValues] reads the values of given keys in a processor's
// table: two HGET of the registry, then one HGET per key in one pipelined
// round trip. [Inspector.TableScan] lists a table's keys up to a limit, with
// HSCAN: its cost grows with the limit.
//
// [Inspector.DeadLetters] lists a processor's dead letters a page at a
// time (XLEN, then XRANGE with COUNT limit+1), and [Inspector.DeadLetter]
// reads one (XRANGE of one ID); the reports count each processor's dead
// letters with XLEN.
//
// Apart from TableScan and DeadLetters, asked for with their limits,
// nothing scans entries or keys (no SCAN, no KEYS, no XRANGE beyond one
// entry).
//
// # Output
//
// [Overview], [StreamReport] and [QueueReport] are the JSON documents
// "leat inspect --json", "leat inspect STREAM --json" and "leat inspect
// queue QUEUE --json" print. Their field names and meanings are stable:
// fields may be added, never renamed.
//
// # Retention
//
// XADD MAXLEN ~ trims a partition to about its size whatever its processors
// have read. A partition whose lag reaches [RetentionWarning] of the size is
// reported (ProcessorPartition.RetentionRisk, and a warning) before the
// trimming can drop entries the processor has not read.
package inspect
