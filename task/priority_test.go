package task_test

import (
	"context"
	"math"
	"sync"
	"testing"
	"time"

	"github.com/leatdev/leat/internal/tools/redistest"
	"github.com/leatdev/leat/task"
)

type prio struct {
	Level string `json:"level"`
}

// TestStrictPriorities: with strict priorities, no task of a lower level
// starts while a higher level has tasks ready.
func TestStrictPriorities(t *testing.T) {
	e := newEnv(t)
	ctx := ctxT(t)
	a := e.app("w1")
	var mu sync.Mutex
	var order []string
	q, err := task.Handle(a, "p", func(ctx context.Context, tk *task.Task[prio]) (struct{}, error) {
		mu.Lock()
		order = append(order, tk.Payload.Level)
		mu.Unlock()
		return struct{}{}, nil
	}, task.Priorities("high", "mid", "low"), task.Concurrency(1))
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range []string{"low", "mid", "high"} {
		ps := make([]prio, 100)
		for i := range ps {
			ps[i] = prio{Level: l}
		}
		if _, err := q.EnqueueMany(ctx, ps, task.Priority(l)); err != nil {
			t.Fatal(err)
		}
	}
	e.run(a)
	redistest.Eventually(t, 20*time.Second, "all ran", func() bool { mu.Lock(); defer mu.Unlock(); return len(order) == 300 })
	mu.Lock()
	defer mu.Unlock()
	for i, l := range order {
		want := []string{"high", "mid", "low"}[i/100]
		if l != want {
			t.Fatalf("task %d was %s, want %s", i, l, want)
		}
	}
}

// TestWeightedPriorities: weighted levels share the workers in proportion
// to their weights (within 10%) while all have tasks ready.
func TestWeightedPriorities(t *testing.T) {
	e := newEnv(t)
	ctx := ctxT(t)
	a := e.app("w1")
	var mu sync.Mutex
	seen := map[string]int{}
	total := 0
	const sample = 2000
	q, err := task.Handle(a, "w", func(ctx context.Context, tk *task.Task[prio]) (struct{}, error) {
		mu.Lock()
		if total < sample {
			seen[tk.Payload.Level]++
		}
		total++
		mu.Unlock()
		return struct{}{}, nil
	}, task.Weighted(task.Level{Name: "gold", Weight: 6}, task.Level{Name: "silver", Weight: 3}, task.Level{Name: "bronze", Weight: 1}),
		task.Concurrency(8))
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range []string{"gold", "silver", "bronze"} {
		ps := make([]prio, sample)
		for i := range ps {
			ps[i] = prio{Level: l}
		}
		if _, err := q.EnqueueMany(ctx, ps, task.Priority(l)); err != nil {
			t.Fatal(err)
		}
	}
	e.run(a)
	redistest.Eventually(t, 30*time.Second, "the sample ran", func() bool { mu.Lock(); defer mu.Unlock(); return total >= sample })
	mu.Lock()
	defer mu.Unlock()
	for l, w := range map[string]float64{"gold": 0.6, "silver": 0.3, "bronze": 0.1} {
		got := float64(seen[l]) / sample
		if math.Abs(got-w)/w > 0.10 {
			t.Errorf("%s got %.3f of the first %d tasks, want %.2f ±10%%", l, got, sample, w)
		}
	}
	t.Logf("first %d tasks: %v", sample, seen)
}
