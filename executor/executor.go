package executor

import "context"

// Executor is a processor running on a worker: the view of it that status
// reports and readiness checks use (app.App.Executors). The runtime behind
// it is internal.
type Executor interface {
	// ID identifies the executor among the processor's members.
	ID() string
	// Stream is the name of the stream processed.
	Stream() string
	// Processor is the processor's name (its consumer group).
	Processor() string
	// Options are the executor's options, defaults applied.
	Options() Options
	// Owned returns the partitions the executor holds now, in order.
	Owned() []int
	// Settled reports whether the executor holds every partition the
	// processor's assignment gives it, and no other.
	Settled(ctx context.Context) (bool, error)
}
