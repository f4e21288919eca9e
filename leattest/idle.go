package leattest

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/leatdev/leat/internal/core"
	"github.com/leatdev/leat/internal/rdb"
	"github.com/leatdev/leat/task"
)

// WaitIdle waits until every processor of the worker's app has been handed
// every entry of every partition of its stream, and has acknowledged them
// (nothing pending), and every task queue the app handles has no task
// pending, running or retrying (tasks scheduled for later are not waited
// for, nor the tasks waiting in a paused queue: only its running ones), as
// the runtime itself sees it in Redis. It fails the test after
// 20s, saying what is left, or when the worker stopped (a halt).
func (w *Worker) WaitIdle() {
	w.k.t.Helper()
	deadline := time.Now().Add(waitTimeout)
	for {
		left, err := w.busy()
		if err == nil && left == "" {
			return
		}
		select {
		case <-w.stopped:
			w.k.t.Fatalf("leattest: the worker stopped before it was idle: %v", w.err)
		default:
		}
		if time.Now().After(deadline) {
			if err != nil {
				left = err.Error()
			}
			w.k.t.Fatalf("leattest: not idle after %s: %s", waitTimeout, left)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// busy says what the app's processors have still to do, "" when nothing.
func (w *Worker) busy() (string, error) {
	ctx := context.Background()
	cat, ok := core.UnwrapCatalog(w.a.Catalog())
	if !ok {
		return "", fmt.Errorf("no catalog")
	}
	var left []string
	for _, p := range w.a.Processors() {
		s, ok := cat.Lookup(p.StreamName())
		if !ok {
			continue
		}
		for n := range s.Partitions() {
			key := s.PartitionKey(n)
			last, err := rdb.LastEntry(ctx, w.k.client, key)
			if err != nil {
				return "", err
			}
			if len(last) == 0 {
				continue
			}
			groups, err := rdb.StreamGroups(ctx, w.k.client, key)
			if err != nil && !strings.Contains(err.Error(), "no such key") {
				return "", err
			}
			done := false
			for _, g := range groups {
				if g.Name == p.Name && g.LastDeliveredID == last[0].ID && g.Pending == 0 {
					done = true
				}
			}
			if !done {
				left = append(left, fmt.Sprintf("%s partition %d", p.FullName(), n))
			}
		}
	}
	ks := keysOf(w.a)
	for _, q := range task.Handled(w.a) {
		counts, err := rdb.ReadCounts(ctx, w.k.client, ks.TaskCounts(q))
		if err != nil {
			return "", err
		}
		_, paused, err := rdb.PausedAt(ctx, w.k.client, ks.TaskConfig(q))
		if err != nil {
			return "", err
		}
		states := []string{"pending", "active", "retrying"}
		if paused {
			states = []string{"active"} // the others wait for a resume
		}
		var busy []string
		for _, st := range states {
			if n, _ := strconv.Atoi(counts[st]); n > 0 {
				busy = append(busy, fmt.Sprintf("%d %s", n, st))
			}
		}
		if len(busy) > 0 {
			left = append(left, fmt.Sprintf("task queue %s (%s)", q, strings.Join(busy, ", ")))
		}
	}
	return strings.Join(left, ", "), nil
}
