package runner

import (
	"testing"
	"time"

	"github.com/leatdev/leat/executor"
)

type countProcessed struct{ n *int }

func (c countProcessed) OnEventsProcessed(_, _ string, _, events int, _ time.Duration) {
	*c.n += events
}

type lockAndRebalance struct{ lost, rebalanced *int }

func (h lockAndRebalance) OnLockLost(string, string, int)        { *h.lost++ }
func (h lockAndRebalance) OnRebalanced(string, string, []int)    { *h.rebalanced++ }
func (h lockAndRebalance) OnSomethingElse(string, string, []int) {}

// A hook implements only the interfaces it cares about; each is called.
func TestHooksAreOptionalInterfaces(t *testing.T) {
	var processed, lost, rebalanced int
	h := newHooks([]executor.Hook{countProcessed{&processed}, lockAndRebalance{&lost, &rebalanced}, "not a hook"})
	h.Processed("s", "p", 0, 3, time.Millisecond)
	h.LockLost("s", "p", 0)
	h.Rebalanced("s", "p", []int{1})
	h.Failed("s", "p", 0, nil) // nobody listens
	if processed != 3 || lost != 1 || rebalanced != 1 {
		t.Fatalf("processed %d, lost %d, rebalanced %d", processed, lost, rebalanced)
	}
}
