package task

import (
	"context"
	"errors"
	"fmt"

	"github.com/leatdev/leat/internal/rdb"
	"github.com/leatdev/leat/internal/topology"
)

// Bounds of the key settings of a keyed queue: KeyConcurrency scans up to
// n tasks of a key at each token taken, so n stays small.
const (
	MaxKeyConcurrencyLimit = 256           // KeyConcurrency
	MaxKeyBacklogLimit     = 1_000_000_000 // MaxKeyBacklog
)

// ErrKeyBacklogFull is matched by the error of Enqueue and EnqueueMany
// when a task was refused because its key holds MaxKeyBacklog tasks in
// line already: nothing of that task was written.
var ErrKeyBacklogFull = errors.New("task: the key's backlog is full")

// KeyConcurrency lets up to n tasks of one key of a keyed queue run at once
// over all workers (default 1, at most 256). Keys still take turns: a key
// has at most as many tokens in the ready stream as it may run tasks, each
// going back to the end of the stream when its task ends and the key has
// more, so a flood of one key does not starve the others. With n = 1 the
// tasks of a key run one at a time, in order. With n > 1 they start in
// order (the first n tasks of the key's line are the ones that may run)
// but may end in any order; a task waiting out a retry or a snooze keeps
// its place among the n. Every program declaring the queue should give
// the same n: it is recorded in the registry and in the queue's live
// settings when the queue registers, and the Redis scripts follow the
// value recorded last. See docs/keyed-queues.md.
func KeyConcurrency(n int) Option {
	return optionFunc(func(s *settings) error {
		if n < 1 || n > MaxKeyConcurrencyLimit {
			return fmt.Errorf("%w: key concurrency %d out of range 1..%d", ErrBadSetting, n, MaxKeyConcurrencyLimit)
		}
		s.keyConc = n
		return nil
	})
}

// MaxKeyBacklog bounds the tasks one key of a keyed queue holds in line
// (waiting, running or waiting out a retry) to m, at most 1e9: an enqueue
// that would make a key hold more is refused with an error matching
// ErrKeyBacklogFull, checked in the same Redis step that would store the
// task, and nothing of it is stored. EnqueueMany refuses each task past
// the bound on its own: the others are created, the refused ones' IDs are
// "". A delayed task is checked at its enqueue, against the key's line
// then, and joins the line when due whatever its length. The bound is
// recorded in the registry, so enqueues of the CLI and the HTTP API
// follow it.
func MaxKeyBacklog(m int) Option {
	return optionFunc(func(s *settings) error {
		if m < 1 || m > MaxKeyBacklogLimit {
			return fmt.Errorf("%w: max key backlog %d out of range 1..%d", ErrBadSetting, m, MaxKeyBacklogLimit)
		}
		s.keyBacklog = m
		return nil
	})
}

// checkKeySettings reports key settings given to a queue that is not
// keyed.
func checkKeySettings(s *settings) error {
	if s.keyed {
		return nil
	}
	var errs []error
	if s.keyConc > 1 {
		errs = append(errs, errors.New("KeyConcurrency needs a keyed queue (Keyed)"))
	}
	if s.keyBacklog > 0 {
		errs = append(errs, errors.New("MaxKeyBacklog needs a keyed queue (Keyed)"))
	}
	return errors.Join(errs...)
}

// writeKeyConcurrency records the queue's key concurrency in its live
// settings, where the Redis scripts read it. A Redis user that may not
// write them (a producer's ACL) leaves them to the workers.
func (q *core) writeKeyConcurrency(ctx context.Context) error {
	if !q.set.keyed {
		return nil
	}
	err := rdb.SetKeyConcurrency(ctx, q.rdb, q.ks.TaskConfig(q.name), q.set.keyConc)
	if err != nil && !topology.Denied(err) {
		return fmt.Errorf("task queue %q: record the key concurrency: %w", q.name, err)
	}
	return nil
}

// refusedCount returns how many tasks write refused because their key's
// line was full (ID "").
func refusedCount(ids []string) int {
	n := 0
	for _, id := range ids {
		if id == "" {
			n++
		}
	}
	return n
}
