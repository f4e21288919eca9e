package rdb

import "strconv"

// Outbox is the stream in the hash slot of partition p of stream where the
// exactly-once outputs of processor are written on Redis Cluster, with the
// acknowledgements of the events they were sent for, before they are
// relayed to their partitions (entries of OutboxEntry's fields; written
// only by the partition's owner, trimmed by the relay with XDEL; no TTL).
func (s KeySpace) Outbox(stream, processor string, p int) string {
	return s.key("outbox", s.partTag(stream, p)) + ":" + processor
}

// Relayed is the hash in the hash slot of partition p of stream that keeps,
// for each outbox relayed to it (field: OutboxSource), the ID of the last
// outbox entry added to the partition (written by output_relay.lua; no
// TTL, one field per source partition and processor).
func (s KeySpace) Relayed(stream string, p int) string { return s.key("relayed", s.partTag(stream, p)) }

// OutboxSource names the outbox of processor on partition p of stream in
// the Relayed hashes: "STREAM/PROCESSOR/P".
func OutboxSource(stream, processor string, p int) string {
	return stream + "/" + processor + "/" + strconv.Itoa(p)
}

// Committed is the string key in the hash slot of partition p of stream
// holding the name of the last commit of processor's outputs applied there
// (output_commit.lua), so that a commit tried again after a lost reply is
// not applied twice (one per partition and processor; no TTL).
func (s KeySpace) Committed(stream, processor string, p int) string {
	return s.key("committed", s.partTag(stream, p)) + ":" + processor
}
