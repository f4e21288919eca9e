package rdb

// RateLimit is the GCRA state of the rate limit of processor of stream
// (string: the theoretical arrival time, µs of server time; written by
// middleware.RateLimit; PX: until the state no longer matters). With key
// non-nil, the limit is the partition key's: the key follows the tag.
func (s KeySpace) RateLimit(stream, processor string, key []byte) string {
	k := s.key("rate", s.procTag(stream, processor))
	if key != nil {
		k += ":k:" + string(key)
	}
	return k
}

// Dedup names the record that the event with idempotency key id was
// processed by processor, local to a partition's hash slot: pass it to
// the partition's LocalKey (string holding the fencing token that recorded
// it; written by middleware.Dedup with a fenced write; PX = the TTL).
func Dedup(processor, id string) string { return "dedup:" + processor + ":" + id }
