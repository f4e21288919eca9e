// Package bench measures leat against raw go-redis loops doing the same work
// on the same Redis server, and reports the ratios. It is the engine of the
// "leat bench" command and of bench/peers, which adds asynq and
// watermill-redisstream. docs/benchmarks.md explains how to read the
// figures and what limits each.
//
// # Throughput
//
// [Send] writes Config.Events records to a stream of Config.Partitions
// partitions, keyed by customer (1,000 distinct keys):
//
//   - leat: Stream.SendMany in chunks of 10,000 records, which encodes each
//     record with msgpack, routes it and pipelines XADD MAXLEN ~, the app's
//     SendBatch (1,000) per round trip;
//   - raw: the same records, encoded and routed before the clock starts,
//     sent with go-redis pipelines of 1,000 XADD MAXLEN ~ commands. Raw send
//     does not encode.
//
// [Process] fills a stream with Config.Events records (untimed), then times
// reading and acknowledging all of them:
//
//   - leat: an App worker (App.Run) with one processor that ranges over
//     events.All() and counts; the time includes starting the worker (join,
//     rebalance, locks), fetching, decoding every record and acknowledging;
//   - raw: one consumer looping over XREADGROUP on all partitions (COUNT 100,
//     BLOCK 100ms) and acknowledging each reply with a pipeline of XACKs.
//     Raw process does not decode;
//   - raw+decode: the raw loop, also decoding each record with msgpack into
//     the record struct, which is what a leat processor pays for decoding.
//
// [Both] produces and consumes at once, from an empty stream until the last
// record is processed: leat's SendMany (chunks of 1,000) beside a worker,
// against a raw producer that encodes and pipelines 1,000 XADDs per round
// trip beside the raw+decode consumer.
//
// Process, Both and Tasks also report what each event or task cost the
// server's CPU and this process's (INFO cpu, and the process's user and
// system time, over the timed part): on a host where Redis and the client
// share the cores, they tell which side bounds the rate.
//
// [Tasks] enqueues Config.Events tasks (untimed), then times running them
// all, their results stored:
//
//   - leat c10, leat c50: an App worker with a task queue whose no-op
//     handler returns the record's ID, at concurrency 10 and 50; the time
//     ends when the queue's count of succeeded tasks reaches Config.Events;
//   - raw: one consumer looping over XREADGROUP (COUNT 100) on one stream of
//     task IDs and, per reply, a pipeline storing each result in its task's
//     hash with a TTL and acknowledging and deleting the entries: a task's
//     Redis work without states, counts, retries or concurrency control.
//
// # Latency
//
// [Latency] sends Config.Rate events/s for Config.Latency over
// Config.Partitions partitions, one unpipelined call per event from 16
// goroutines, each event due at start + i/rate and stamped when its call
// starts: leat's Send to a worker's processor, against raw XADD to one
// consumer blocked in XREADGROUP on all partitions. Before the clock, one
// event per partition is sent until the consumer has seen them all. Each
// round gives p50, p99 and p99.9 (nearest rank) of send-to-processor times
// in milliseconds, and the send rate achieved.
//
// # Rebalance
//
// [Rebalance] runs a producer sending one event to each partition every
// 5ms, starts worker a, waits until it processes every partition, starts
// worker b (join), waits until the assignment settles (no partition changed
// worker for a second and all flow), then stops b gracefully (graceful
// stop) and waits again. For each it reports the partitions moved, the
// largest gap between two processed events of a moved partition, the
// median over moved partitions of their largest gap, and the largest gap of
// the partitions that did not move (which should be near 5ms).
//
// # Memory and idle cost
//
// [Memory] reports this process's RSS before a worker starts, with an idle
// worker over a stream of Config.Wide partitions, and its peak while a
// worker drains Config.Events records from such a stream; and the Redis
// memory per entry (MEMORY USAGE, every element counted, divided by the
// entries) of a one-partition stream of records whose encoding is 100
// bytes, written by leat (key and data fields) against raw XADD of
// the same 100 bytes as the only field, and of the key and the 100 bytes.
//
// [Idle] reports the commands per second Redis runs for one idle worker
// over Config.Wide partitions (INFO commandstats over Config.Idle, Lua
// scripts' commands included, the benchmark's own INFO and CLIENT calls
// excluded) and its connections (CLIENT LIST, by client name); the same
// per queue for one worker of 10 idle task queues; and for one worker of a
// single idle queue.
//
// # Rounds
//
// [Measure] runs every variant once per round, Config.Rounds times. The
// order rotates from round to round (leat, raw; then raw, leat; ...), so
// drift of a shared machine favours no variant. A Result holds each
// variant's figures per round and their medians, and Ratios, the median of
// one variant divided by the median of another, figure by figure: for a
// rate, below 1 means leat is slower; for a latency, a size or a CPU cost,
// above 1 means leat costs more. Rebalance runs its two events in each round.
//
// # Keys and servers
//
// Everything is written under a fresh key prefix, "leat-bench:" and a random
// suffix, by an app called "bench"; all keys of that prefix are deleted
// (SCAN and UNLINK) after every run of a variant and when the benchmark
// ends, also when it fails or is interrupted. Redis Cluster is not
// supported: the raw reader's XREADGROUP over all partitions would cross
// slots. [StartAOFServer] starts a redis-server of the benchmark's own that
// persists every write (appendonly yes, appendfsync everysec).
package bench
