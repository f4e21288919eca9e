package rdb

// TableChanges is the change log of table name kept by processor on
// partition p of stream, for tables declared with stream.KeepChanges: a
// stream (XADD MAXLEN ~ the declared length; no TTL) with one entry per
// commit that wrote the table, appended by table_commit.lua in the step
// that applies the writes. It shares the partition lock's hash slot.
func (s KeySpace) TableChanges(stream, processor, name string, p int) string {
	return s.key("tablelog", s.partTag(stream, p)) + ":" + processor + ":" + name
}
