// Package stream declares partitioned streams of typed records and sends
// them to Redis.
//
// # Streams and partitions
//
// A stream is declared on an app (any [Host]) with a record type, a partition
// key, a partition count (default 16) and a partition size (default 50,000):
//
//	orders, err := stream.Declare[Order](a, "orders", stream.KeyField("customer"))
//
// Each partition is its own Redis stream. A record goes to partition
// xxhash64(key) mod partitions, where the key bytes are a string's UTF-8
// bytes or an integer's decimal digits ([KeyBytes], [PartitionOf]). All
// records of one key land on one partition, in the order they were sent, and
// a processor sees them in that order.
//
// # Entries
//
// A record is encoded by the stream's [Codec] (msgpack by default, JSON, or
// either compressed with gzip or zstd) and written as one stream entry with
// the fields "key", "data" and one "h:NAME" field per header (see docs/concepts.md's
// entry layout). The registry records the stream's entry codec once, set by
// its first declaration; an entry encoded with another codec (after the
// stream's codec changed) carries a "codec" field too, so readers decode
// what was written before and after the change.
//
// # Sending
//
// [Stream.Send], [Stream.SendMany] and [Stream.SendMessages] encode every
// record first, so a record that cannot be encoded fails the call before
// anything is sent ([ErrEncode]). Then they pipeline XADD ... MAXLEN ~ size,
// a batch of commands per round trip, and return the entry IDs in order.
// On Redis Cluster, records that a failover refused (the node was gone or
// answered CLUSTERDOWN, MOVED, TRYAGAIN, READONLY: the XADD did not run) are
// sent again after the client's slot map was reloaded, in order, before the
// partition's next records, until ctx ends or 30s pass without progress;
// records whose connection broke after they were written are sent again
// too, and may then be added twice (delivery is at-least-once).
//
// Sends of a few records made at once from many goroutines (request
// handlers, processors) share round trips: while two are under way, the
// next ones wait and go together on one pipeline as soon as one of those
// ends, each answered with its own IDs and errors; a lone send goes at once.
//
// # Events
//
// A processor (registered with app.Process) receives an [Events] of one
// partition and ranges over it with Go iterators: [Events.All] one event at a
// time, [Events.Records] the records only, [Events.Batches] at most n events
// waiting at most d. An event or batch is acknowledged when the loop body that
// received it finishes and asks for the next; leaving the loop with an error
// applies the processor's failure policy to it. Each [Event] carries its
// record, entry ID, partition, key, headers and delivery count. An Events
// value is used from its processor call's goroutine only.
//
// # Ownership
//
// A processor call runs while its worker holds the partition's lock; its
// context ends at the moment the worker must stop trusting the lock.
// [Events.Token] is the fencing token of that hold, larger than any before
// it; [Events.Fenced] applies Redis writes atomically only while the hold
// lasts, or returns [ErrNotOwner]; [Events.LocalKey] names keys in the
// partition's hash slot, for fenced writes on Redis Cluster.
//
// # Tables
//
// A [Table] is state a processor keeps per key, in Redis beside the
// partition the key's events go to, declared on the stream for one
// processor:
//
//	totals, err := stream.DeclareTable[int64](orders, "billing", "totals")
//
// In the processor, [Table.In] opens it on the call's events; what a loop body
// writes ([Store.Set], [Store.Delete]) is staged, and applied when its event
// or batch is acknowledged, in one script with the acknowledgement that runs
// only while the worker still holds the partition's lock. An event
// acknowledged has had its writes applied once; an event that failed, or whose
// worker died or lost the partition first, none: its next processing starts
// from the values before it (exactly-once state, at-least-once processing).
// [Store.Get] sees the call's staged writes; [Table.Get] reads applied values
// from anywhere, and [Table.Scan] walks all of them. A key's value lives in its own partition ([ErrOtherPartition]).
//
// # Exactly-once outputs
//
// [Stream.In] opens a stream in a processor call as an [Output]: what a loop
// body sends through it ([Output.Send], [Output.SendMessages]) is staged and
// written when its event or batch is acknowledged, in the same script as the
// acknowledgement and the table writes, only while the worker holds the
// partition. An event processed twice (a crash, a stall past the lock
// expiry, a frozen link, a retry) sends its records once; an event that
// failed sends none:
//
//	sales := byProduct.In(events)
//	for e := range events.All() {
//		if err := sales.Send(Sale{Order: e.Record.ID, Product: e.Record.Product}); err != nil {
//			return err
//		}
//	}
//
// On Redis Cluster the records go through an outbox in the source
// partition's hash slot and are relayed to their partitions right after the
// commit, by a write that adds nothing twice. Records from one source
// partition to one destination partition keep their order. A plain
// [Stream.Send] in a processor stays at least once. See docs/exactly-once.md.
//
// # Joins
//
// [Join] joins a table to a co-partitioned stream (same partition count, keys
// of the same kind; checked when declared, [ErrNotCoPartitioned]): a processor of
// the stream reads, for each event's key, the value the table's processor
// committed, from the partition of the same number, one HGET per event
// ([JoinedTable.Get]) or one HMGET per batch ([JoinedTable.GetBatch]):
//
//	join, err := stream.Join(orders, customersTable)
//	found, ok, err := join.GetBatch(ctx, batch)
//
// It reads the committed values at processing time, with no alignment in time
// between the streams: when the table's processor lags, an event sees the value
// before the changes it has not committed, or none. [GlobalTable] keeps an
// in-memory copy of every partition of a table declared with [KeepChanges], for
// small reference data every worker reads whole: loaded by [Global.Run], kept
// current from the table's change log (each commit appends its writes to a
// bounded log per partition, in the step that applies them), bounded by
// GlobalMaxKeys and GlobalMaxBytes; [Global.Ready] waits until it caught up. See
// docs/joins.md.
//
// # Windowed tables
//
// A [Windowed] table keeps a value per key and window of event time:
// [Tumbling], [Hopping] or [Session] windows, declared with
// [DeclareWindowed] and updated in the processor with [WindowStore.Update]
// (opened with [Windowed.In]). Its writes are a table's, staged and
// committed with the acknowledgement. Each partition has an event time,
// committed with the acknowledgement too; a window closes when its end
// plus the [Grace] is at or before it, and its final value is emitted
// once ([EmitTo]) in the step that acknowledges the event that moved
// event time past it. Events too late for every window they fall in are
// counted ([Windowed.Late]) and dropped, or sent to a side stream
// ([LateTo]). Closed windows are kept for their [WindowRetention], then
// deleted by the same commits. See docs/windows.md.
//
// # Registry
//
// Each declared stream's [Definition] is written to a hash in Redis when the
// app starts or first sends, so tools without the app's Go code (the leat
// CLI, programs in other languages) route and decode the same way. A
// definition whose partition count or key field differs from the registered
// one is refused ([ErrConflict]): changing routing would break per-key order.
package stream
