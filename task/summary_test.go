package task_test

import (
	"testing"
	"time"

	"github.com/leatdev/leat/internal/tools/redistest"
	"github.com/leatdev/leat/task"
)

// Summaries reads every queue's counts and pause in two round trips
// whatever the number of queues (the registry, then one pipeline), and a
// queue's Summary in one; both say what Counts and Paused say.
func TestSummaries(t *testing.T) {
	e := newEnv(t)
	ctx := ctxT(t)
	a := e.app("w1")
	if sums, err := task.Summaries(ctx, a); err != nil || len(sums) != 0 {
		t.Fatalf("no queue yet: %v, %v", sums, err)
	}
	queues := map[string]*task.Queue[job, out]{}
	for i, name := range []string{"c", "a", "b"} {
		q, err := task.Declare[job, out](a, name, task.Concurrency(i+1))
		if err != nil {
			t.Fatal(err)
		}
		for range i + 1 {
			if _, err := q.Enqueue(ctx, job{N: i}); err != nil {
				t.Fatal(err)
			}
		}
		queues[name] = q
	}
	if err := queues["b"].Pause(ctx); err != nil {
		t.Fatal(err)
	}
	if err := queues["c"].SetRate(ctx, 5, time.Minute); err != nil {
		t.Fatal(err)
	}
	if err := queues["a"].SetConcurrency(ctx, 7); err != nil {
		t.Fatal(err)
	}
	rt := &redistest.RoundTrips{}
	e.client.AddHook(rt)
	sums, err := task.Summaries(ctx, a)
	if err != nil {
		t.Fatal(err)
	}
	if n := rt.N(); n != 2 {
		t.Errorf("Summaries of 3 queues made %d round trips, want 2", n)
	}
	if len(sums) != 3 {
		t.Fatalf("%d summaries, want 3", len(sums))
	}
	for i, name := range []string{"a", "b", "c"} { // by name
		s, q := sums[i], queues[name]
		counts, err := q.Counts(ctx)
		if err != nil {
			t.Fatal(err)
		}
		paused, at, err := q.Paused(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if s.Definition.Name != name || s.Definition.Concurrency != q.Definition().Concurrency ||
			s.Counts[task.Pending] != counts[task.Pending] || len(s.Counts) != len(task.States) ||
			s.Paused != paused || !s.PausedAt.Equal(at) {
			t.Errorf("summary %d: %+v; want queue %s, counts %v, paused %v at %v", i, s, name, counts, paused, at)
		}
		before := rt.N()
		one, err := q.Summary(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if n := rt.N() - before; n != 1 {
			t.Errorf("Summary of %s made %d round trips, want 1", name, n)
		}
		if one.Definition.Name != name || one.Counts[task.Pending] != s.Counts[task.Pending] || one.Paused != s.Paused || s.Leader != "" {
			t.Errorf("Summary of %s %+v, Summaries' %+v", name, one, s)
		}
	}
	if sums[0].Counts[task.Pending] != 2 || sums[1].Counts[task.Pending] != 3 || !sums[1].Paused || sums[0].Paused || sums[1].PausedAt.IsZero() {
		t.Errorf("a: 2 pending, b: 3 pending and paused; got %+v", sums)
	}
	if !sums[2].LiveRate || sums[2].Rate != (task.RateLimit{N: 5, Window: time.Minute}) || sums[0].LiveRate || sums[0].Rate.N != 0 {
		t.Errorf("c: a live rate of 5 per minute, a: none; got %+v", sums)
	}
	// a: declared with 2, set live to 7; b: its own 3.
	if !sums[0].LiveConcurrency || sums[0].Concurrency != 7 || sums[1].LiveConcurrency || sums[1].Concurrency != 3 {
		t.Errorf("a: a live concurrency of 7, b: its own 3; got %+v", sums)
	}
}
