package executor

// Dead-letter entry fields, besides the original entry's own fields ("key",
// "codec", "data", "h:*"), which are copied as they were read, the codec
// always: a dead-letter stream has no entry codec of its own.
const (
	DeadStream     = "dead:stream"
	DeadPartition  = "dead:partition"
	DeadID         = "dead:id"
	DeadError      = "dead:error"
	DeadTime       = "dead:time" // RFC 3339, UTC
	DeadDeliveries = "dead:deliveries"
	DeadProcessor  = "dead:processor"
)
