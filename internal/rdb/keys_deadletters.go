package rdb

// ReplayMark is the idempotency marker of the replay of dead letter
// deadID of processor into partition p of stream (string holding the ID
// of the entry the replay added; in the partition's slot, so that one
// script checks it, adds the entry and sets it; no TTL until the dead
// letter is deleted, then a day).
func (s KeySpace) ReplayMark(stream, processor string, p int, deadID string) string {
	return s.key("replayed", s.partTag(stream, p)) + ":" + processor + ":" + deadID
}
