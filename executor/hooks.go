package executor

import "time"

// Hooks report what the runtime does, for metrics and tracing. A hook is any
// value implementing one or more of the Hook* interfaces below; the runtime
// calls the methods it finds. New hooks are new interfaces, so adding one
// never breaks an existing implementation. Every method must be cheap and
// safe for concurrent use: it runs on the runtime's goroutines.
type Hook any

// HookEventsProcessed is called after events are acknowledged following
// successful processing: events is the batch size (1 for single events),
// took how long the loop body that received them ran (handler latency).
type HookEventsProcessed interface {
	OnEventsProcessed(stream, processor string, partition, events int, took time.Duration)
}

// HookProcessorFailed is called when a processor call fails, before
// retries and the failure policy.
type HookProcessorFailed interface {
	OnProcessorFailed(stream, processor string, partition int, err error)
}

// HookPartitionQuarantined is called when the Quarantine policy stops a
// partition.
type HookPartitionQuarantined interface {
	OnPartitionQuarantined(stream, processor string, partition int, err error)
}

// HookLockLost is called when a partition's lock is lost or no longer
// trusted.
type HookLockLost interface {
	OnLockLost(stream, processor string, partition int)
}

// HookEntriesTrimmed is called when retention removed entries of a
// partition before the processor read them.
type HookEntriesTrimmed interface {
	OnEntriesTrimmed(stream, processor string, partition int, entries int64)
}

// HookRebalanced is called when the executor applies a new assignment,
// with the partitions it now owns.
type HookRebalanced interface {
	OnRebalanced(stream, processor string, owned []int)
}
