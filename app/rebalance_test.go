package app_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/leatdev/leat/app"
	"github.com/leatdev/leat/internal/tools/redistest"
	"github.com/leatdev/leat/stream"
)

// Acceptance 3: a processor stuck on key A does not delay key B.
func TestSlowPartitionDoesNotStallOthers(t *testing.T) {
	t.Parallel()
	env := newEnv(t)
	a, s := env.newApp(2, nil)
	ks := keysOnDistinctPartitions(t, s, 2)
	slow, fast := ks[0], ks[1]
	r := newRecorder()
	fn := func(ctx context.Context, events *stream.Events[event]) error {
		for e := range events.All() {
			if e.Record.Key == slow {
				select {
				case <-time.After(10 * time.Second):
				case <-ctx.Done():
					return ctx.Err()
				}
			}
			r.add(e)
		}
		return nil
	}
	if err := app.Process(a, s, "p", fn); err != nil {
		t.Fatal(err)
	}
	sendEvents(t, s, []string{slow}, 3, 0)
	w := startWorker(t, a)
	sendEvents(t, s, []string{fast}, 50, 0)
	redistest.Eventually(t, 4*time.Second, "50 events of the fast key", func() bool { return r.count() == 50 })
	w.stop(t)
}

// Acceptance 5: sequential join and leave keep exactly-once and per-key order.
func TestSequentialJoinLeave(t *testing.T) {
	t.Parallel()
	env := newEnv(t)
	r := newRecorder()
	keys := []string{"A", "B", "C", "D", "E", "F", "G", "H", "I", "J"}
	var apps []*app.App
	var s *stream.Stream[event]
	newWorker := func() *worker {
		a, st := env.newApp(3, nil)
		s = st
		if err := app.Process(a, st, "p", collect(r)); err != nil {
			t.Fatal(err)
		}
		apps = append(apps, a)
		return startWorker(t, a)
	}
	owned := func(a *app.App) []int {
		if ex := a.Executors(); len(ex) > 0 {
			return ex[0].Owned()
		}
		return nil
	}
	balanced := func(n int) func() bool {
		return func() bool {
			total := 0
			for _, a := range apps[:n] {
				o := owned(a)
				if len(o) != 3/n && len(o) != 3/n+1 {
					return false
				}
				total += len(o)
			}
			return total == 3
		}
	}
	w1 := newWorker()
	redistest.Eventually(t, 10*time.Second, "w1 owns 3", balanced(1))
	w2 := newWorker()
	redistest.Eventually(t, 10*time.Second, "w1, w2 balanced", balanced(2))
	w3 := newWorker()
	redistest.Eventually(t, 10*time.Second, "w1..w3 balanced", balanced(3))
	sent := sendEvents(t, s, keys, 3, 0)
	sent = append(sent, sendEvents(t, s, keys[:3], 1, 3)...)
	redistest.Eventually(t, 10*time.Second, "33 events", func() bool { return r.count() == 33 })
	if err := w3.stop(t); err != nil {
		t.Fatal(err)
	}
	redistest.Eventually(t, 10*time.Second, "w1, w2 balanced after w3 left", balanced(2))
	if err := w2.stop(t); err != nil {
		t.Fatal(err)
	}
	redistest.Eventually(t, 10*time.Second, "w1 owns 3 again", balanced(1))
	sent = append(sent, sendEvents(t, s, keys, 3, 10)...)
	sent = append(sent, sendEvents(t, s, keys[:3], 1, 13)...)
	redistest.Eventually(t, 10*time.Second, "66 events", func() bool { return r.count() == 66 })
	if err := w1.stop(t); err != nil {
		t.Fatal(err)
	}
	r.exactlyOnce(t, sent)
	r.inOrder(t, false)
}

// Acceptance 9: 256 partitions, 16 workers, 1,024 events with random
// handler delays of 0-100ms: each processed exactly once.
func TestStress(t *testing.T) {
	if testing.Short() {
		t.Skip("stress test")
	}
	t.Parallel()
	env := newEnv(t)
	r := newRecorder()
	var ws []*worker
	var s *stream.Stream[event]
	for range 16 {
		a, st := env.newApp(256, func(c *app.Config) { c.Processing.Prefetch = 10 })
		s = st
		fn := func(ctx context.Context, events *stream.Events[event]) error {
			for e := range events.All() {
				select {
				case <-time.After(time.Duration(rand.IntN(100)) * time.Millisecond):
				case <-ctx.Done():
					return ctx.Err()
				}
				r.add(e)
			}
			return nil
		}
		if err := app.Process(a, st, "p", fn, app.LockExpiry(5*time.Second), app.Grace(5*time.Second)); err != nil {
			t.Fatal(err)
		}
		ws = append(ws, startWorker(t, a))
	}
	var sent []event
	for i := range 1024 {
		sent = append(sent, event{Key: fmt.Sprintf("key-%d", rand.IntN(5000)), Seq: i})
	}
	ctx := context.Background()
	if _, err := s.SendMany(ctx, sent); err != nil {
		t.Fatal(err)
	}
	redistest.Eventually(t, 60*time.Second, "1024 events", func() bool { return r.count() >= 1024 })
	var wg sync.WaitGroup
	for _, w := range ws {
		wg.Add(1)
		go func() { defer wg.Done(); w.stop(t) }()
	}
	wg.Wait()
	r.exactlyOnce(t, sent)
}

// Acceptance 10 (integration): partitions that a join does not move keep
// processing without a gap longer than the read timeout.
func TestJoinDoesNotPauseUnmovedPartitions(t *testing.T) {
	t.Parallel()
	env := newEnv(t)
	const readBlock = 500 * time.Millisecond
	var mu sync.Mutex
	times := map[int][]time.Time{}
	fn := func(ctx context.Context, events *stream.Events[event]) error {
		for e := range events.All() {
			mu.Lock()
			times[e.Partition] = append(times[e.Partition], time.Now())
			mu.Unlock()
		}
		return nil
	}
	newApp := func() *app.App {
		a, s := env.newApp(4, func(c *app.Config) { c.Processing.ReadBlock = readBlock })
		if err := app.Process(a, s, "p", fn); err != nil {
			t.Fatal(err)
		}
		return a
	}
	a1 := newApp()
	_, s := env.newApp(4, nil)
	keys := keysOnDistinctPartitions(t, s, 4)
	startWorker(t, a1)
	redistest.Eventually(t, 10*time.Second, "w1 owns 4", func() bool { ex := a1.Executors(); return len(ex) == 1 && len(ex[0].Owned()) == 4 })

	// A steady flow on every partition.
	ctx, stopSending := context.WithCancel(context.Background())
	var sending sync.WaitGroup
	sending.Add(1)
	go func() {
		defer sending.Done()
		for i := 0; ctx.Err() == nil; i++ {
			for _, k := range keys {
				s.Send(ctx, event{Key: k, Seq: i})
			}
			select {
			case <-ctx.Done():
			case <-time.After(20 * time.Millisecond):
			}
		}
	}()
	processed := func(p int) int {
		mu.Lock()
		defer mu.Unlock()
		return len(times[p])
	}
	redistest.Eventually(t, 10*time.Second, "the flow on every partition", func() bool {
		return processed(0) > 5 && processed(1) > 5 && processed(2) > 5 && processed(3) > 5
	})
	joinAt := time.Now()
	a2 := newApp()
	startWorker(t, a2)
	redistest.Eventually(t, 10*time.Second, "2 partitions each", func() bool {
		ex1, ex2 := a1.Executors(), a2.Executors()
		return len(ex2) == 1 && len(ex1[0].Owned()) == 2 && len(ex2[0].Owned()) == 2
	})
	kept := a1.Executors()[0].Owned()
	base := map[int]int{}
	for _, p := range kept {
		base[p] = processed(p)
	}
	redistest.Eventually(t, 10*time.Second, "more events on the kept partitions", func() bool {
		return processed(kept[0]) > base[kept[0]]+10 && processed(kept[1]) > base[kept[1]]+10
	})
	stopSending()
	sending.Wait()

	mu.Lock()
	defer mu.Unlock()
	for _, p := range kept {
		var worst time.Duration
		ts := times[p]
		for i := 1; i < len(ts); i++ {
			if ts[i].Before(joinAt.Add(-100 * time.Millisecond)) {
				continue
			}
			worst = max(worst, ts[i].Sub(ts[i-1]))
		}
		if worst > readBlock {
			t.Errorf("partition %d (not moved) paused %s during the join, more than the read timeout %s", p, worst, readBlock)
		}
	}
}

// Acceptance 8 (in process): exactly one leader among 3 workers; when it
// stops, another takes over.
func TestLeadership(t *testing.T) {
	t.Parallel()
	env := newEnv(t)
	var apps []*app.App
	var ws []*worker
	for range 3 {
		a, s := env.newApp(2, nil)
		if err := app.Process(a, s, "p", collect(newRecorder())); err != nil {
			t.Fatal(err)
		}
		apps = append(apps, a)
		ws = append(ws, startWorker(t, a))
	}
	leaders := func() []int {
		var out []int
		for i, a := range apps {
			if a.IsLeader() {
				out = append(out, i)
			}
		}
		return out
	}
	redistest.Eventually(t, 10*time.Second, "one leader", func() bool { return len(leaders()) == 1 })
	// Stable: still exactly one after a few refresh rounds.
	for range 20 {
		if l := leaders(); len(l) > 1 {
			t.Fatalf("leaders %v", l)
		}
		time.Sleep(50 * time.Millisecond)
	}
	old := leaders()[0]
	ws[old].stop(t)
	// A graceful stop releases the lease: the next leader does not wait for
	// it to expire (2s).
	redistest.Eventually(t, time.Second, "a new leader", func() bool { l := leaders(); return len(l) == 1 && l[0] != old })
}
