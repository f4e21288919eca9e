package rdb

// Background is the record of the app's leader-only background task name
// (hash: term, tick, done; written only by the holder of the leader lease,
// PX 3 × the leader lease, kept alive by each leader). It shares the leader
// lease's hash slot, so one script checks the lease and writes the record.
func (s KeySpace) Background(name string) string { return s.key("bg", s.appTag()) + ":" + name }
