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

// hooks holds the hooks of each kind, found once.
type hooks struct {
	processed   []HookEventsProcessed
	failed      []HookProcessorFailed
	quarantined []HookPartitionQuarantined
	lockLost    []HookLockLost
	trimmed     []HookEntriesTrimmed
	rebalanced  []HookRebalanced
}

func newHooks(hs []Hook) hooks {
	var h hooks
	for _, x := range hs {
		if v, ok := x.(HookEventsProcessed); ok {
			h.processed = append(h.processed, v)
		}
		if v, ok := x.(HookProcessorFailed); ok {
			h.failed = append(h.failed, v)
		}
		if v, ok := x.(HookPartitionQuarantined); ok {
			h.quarantined = append(h.quarantined, v)
		}
		if v, ok := x.(HookLockLost); ok {
			h.lockLost = append(h.lockLost, v)
		}
		if v, ok := x.(HookEntriesTrimmed); ok {
			h.trimmed = append(h.trimmed, v)
		}
		if v, ok := x.(HookRebalanced); ok {
			h.rebalanced = append(h.rebalanced, v)
		}
	}
	return h
}

func (h *hooks) Processed(stream, processor string, partition, events int, took time.Duration) {
	for _, x := range h.processed {
		x.OnEventsProcessed(stream, processor, partition, events, took)
	}
}

func (h *hooks) Failed(stream, processor string, partition int, err error) {
	for _, x := range h.failed {
		x.OnProcessorFailed(stream, processor, partition, err)
	}
}

func (h *hooks) Quarantined(stream, processor string, partition int, err error) {
	for _, x := range h.quarantined {
		x.OnPartitionQuarantined(stream, processor, partition, err)
	}
}

func (h *hooks) LockLost(stream, processor string, partition int) {
	for _, x := range h.lockLost {
		x.OnLockLost(stream, processor, partition)
	}
}

func (h *hooks) Trimmed(stream, processor string, partition int, entries int64) {
	for _, x := range h.trimmed {
		x.OnEntriesTrimmed(stream, processor, partition, entries)
	}
}

func (h *hooks) Rebalanced(stream, processor string, owned []int) {
	for _, x := range h.rebalanced {
		x.OnRebalanced(stream, processor, owned)
	}
}
