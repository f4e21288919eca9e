// Package bench measures leat against raw go-redis loops doing the same work
// on the same Redis server, and reports the ratio. It is the engine of the
// "leat bench" command.
//
// # Benchmarks
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
// Each run of a variant starts on an empty stream of its own (for Process,
// one filled with the same records), and everything it wrote is deleted
// before the next run.
//
// [Tasks] enqueues Config.Events tasks (untimed), then times running them
// all, their results stored:
//
//   - leat: an App worker with a task queue whose no-op handler returns the
//     record's ID, at concurrency 50; the time ends when the queue's count
//     of succeeded tasks reaches Config.Events;
//   - raw: one consumer looping over XREADGROUP (COUNT 100) on one stream of
//     task IDs and, per reply, a pipeline storing each result in its task's
//     hash with a TTL and acknowledging and deleting the entries: a task's
//     Redis work without states, counts, retries or concurrency control.
//
// # Rounds
//
// Every variant runs once per round, Config.Rounds times. The order rotates
// from round to round (leat, raw; then raw, leat; ...), so drift of a shared
// machine favours no variant. A Result holds each variant's events/s per
// round and their median, and Ratio, the median of leat divided by the
// median of raw: below 1, leat is slower.
//
// # Keys
//
// Everything is written under a fresh key prefix, "leat-bench:" and a random
// suffix, by an app called "bench"; all keys of that prefix are deleted
// (SCAN and UNLINK) when the benchmark ends, also when it fails or is
// interrupted. Redis Cluster is not supported: the raw reader's XREADGROUP
// over all partitions would cross slots.
package bench
