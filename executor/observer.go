package executor

import "time"

// Observer receives the runtime's events, for metrics. Every method must be
// cheap and safe for concurrent use; embed NopObserver to implement only some.
type Observer interface {
	// Processed counts events acknowledged after successful processing;
	// took is how long the loop body that received them ran (handler
	// latency, per event or per batch).
	Processed(stream, processor string, partition, events int, took time.Duration)
	// Failed counts processor failures (before retries and policy).
	Failed(stream, processor string, partition int, err error)
	// Quarantined reports a partition stopped by the Quarantine policy.
	Quarantined(stream, processor string, partition int, err error)
	// LockLost reports a partition whose lock was lost or not trusted.
	LockLost(stream, processor string, partition int)
	// Trimmed reports entries removed from a partition by retention before
	// the processor read them.
	Trimmed(stream, processor string, partition int, entries int64)
	// Rebalanced reports a new assignment applied by this executor, with
	// the partitions it now owns.
	Rebalanced(stream, processor string, owned []int)
}

// NopObserver ignores everything.
type NopObserver struct{}

func (NopObserver) Processed(string, string, int, int, time.Duration) {}
func (NopObserver) Failed(string, string, int, error)                 {}
func (NopObserver) Quarantined(string, string, int, error)            {}
func (NopObserver) LockLost(string, string, int)                      {}
func (NopObserver) Rebalanced(string, string, []int)                  {}
func (NopObserver) Trimmed(string, string, int, int64)                {}
