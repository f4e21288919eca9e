// Package inspect reads the state of a leat app from Redis, for the "leat
// inspect" command, dashboards and metrics: its streams, their partitions,
// what each processor has done with each partition (owner, lag, pending,
// quarantine), its leader and its workers.
//
// # Cost
//
// Every figure comes from a command that costs O(1) per key, sent in one
// pipelined round trip per kind: XINFO STREAM (without FULL) and XINFO
// GROUPS per partition, XPENDING in its summary form, GET of the partition
// locks, ZRANGE of the members, GET of the assignment and HGETALL of the
// registries and stop reports. Reading a stream costs O(partitions ×
// processors) commands, whatever the length of the streams; nothing scans
// entries or keys (no SCAN, no KEYS, no XRANGE).
//
// # Output
//
// [Overview] and [StreamReport] are the JSON documents "leat inspect --json"
// and "leat inspect STREAM --json" print. Their field names and meanings
// are stable: fields may be added, never renamed.
//
// # Retention
//
// XADD MAXLEN ~ trims a partition to about its size whatever its processors
// have read. A partition whose lag reaches [RetentionWarning] of the size is
// reported (ProcessorPartition.RetentionRisk, and a warning) before the
// trimming can drop entries the processor has not read.
package inspect
