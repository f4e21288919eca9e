package runner

import (
	"time"

	"github.com/leatdev/leat/executor"
)

// hooks holds the hooks of each kind, found once.
type hooks struct {
	processed   []executor.HookEventsProcessed
	failed      []executor.HookProcessorFailed
	quarantined []executor.HookPartitionQuarantined
	lockLost    []executor.HookLockLost
	trimmed     []executor.HookEntriesTrimmed
	rebalanced  []executor.HookRebalanced
}

func newHooks(hs []executor.Hook) hooks {
	var h hooks
	for _, x := range hs {
		if v, ok := x.(executor.HookEventsProcessed); ok {
			h.processed = append(h.processed, v)
		}
		if v, ok := x.(executor.HookProcessorFailed); ok {
			h.failed = append(h.failed, v)
		}
		if v, ok := x.(executor.HookPartitionQuarantined); ok {
			h.quarantined = append(h.quarantined, v)
		}
		if v, ok := x.(executor.HookLockLost); ok {
			h.lockLost = append(h.lockLost, v)
		}
		if v, ok := x.(executor.HookEntriesTrimmed); ok {
			h.trimmed = append(h.trimmed, v)
		}
		if v, ok := x.(executor.HookRebalanced); ok {
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
