package runner

import (
	"context"
	"slices"

	"github.com/leatdev/leat/executor"
)

// The executor is what app.App.Executors lists.
var _ executor.Executor = (*Executor)(nil)

// Stream returns the name of the stream the executor processes.
func (e *Executor) Stream() string { return e.stream.Name() }

// Processor returns the name of the processor the executor runs.
func (e *Executor) Processor() string { return e.processor }

// Settled reports whether the executor holds what it was assigned: it is a
// member of the stored assignment and holds the lock of, and runs, every
// partition the assignment gives it. It reads the assignment (one GET).
// During a rebalance an executor is briefly not settled.
func (e *Executor) Settled(ctx context.Context) (bool, error) {
	a, err := loadAssignment(ctx, e.appGroup, e.stream.Partitions())
	if err != nil {
		return false, err
	}
	mine, ok := a.Members[e.id]
	if !ok {
		return false, nil
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	return !slices.ContainsFunc(mine, func(p int) bool { return !e.ready[p] }), nil
}
