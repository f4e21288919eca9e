package app_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/leatdev/leat/app"
	"github.com/leatdev/leat/internal/tools/redistest"
)

// A leader-only task with a Lease runs on the holder of that lease among
// the workers that register it, not on the app's leader: with the app's
// leader a program without the task, the task runs on the other program;
// when its holder stops gracefully, another worker that registers it takes
// the lease over, in a later term (the app's term counter).
func TestBackgroundLease(t *testing.T) {
	e := newEnv(t)
	type run struct {
		worker string
		term   int64
	}
	var mu sync.Mutex
	var runs []run
	newApp := func(id string, withTask bool) *app.App {
		a, _ := e.newApp(1, func(c *app.Config) { c.WorkerID = id; c.LeaderLease = time.Second })
		if !withTask {
			return a
		}
		err := a.Background("sweep", func(ctx context.Context) error {
			term, _ := app.LeaderTerm(ctx)
			mu.Lock()
			runs = append(runs, run{id, term})
			mu.Unlock()
			return nil
		}, app.Schedule{Every: 20 * time.Millisecond, LeaderOnly: true, Lease: "sweeper"})
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	without := newApp("without", false)
	startWorker(t, without)
	redistest.Eventually(t, 10*time.Second, "the program without the task leads the app", without.IsLeader)
	holders := map[string]*worker{}
	for _, id := range []string{"h1", "h2"} {
		holders[id] = startWorker(t, newApp(id, true))
	}
	last := func() run {
		mu.Lock()
		defer mu.Unlock()
		if len(runs) == 0 {
			return run{}
		}
		return runs[len(runs)-1]
	}
	redistest.Eventually(t, 10*time.Second, "the task runs", func() bool { return last().worker != "" })
	first := last()
	if err := holders[first.worker].stop(t); err != nil {
		t.Fatal(err)
	}
	redistest.Eventually(t, 10*time.Second, "the other worker takes the lease over", func() bool {
		r := last()
		return r.worker != first.worker
	})
	second := last()
	if second.term <= first.term {
		t.Fatalf("terms %d then %d: want them to grow", first.term, second.term)
	}
	if !without.IsLeader() {
		t.Fatalf("the app's leader moved: the test proves nothing")
	}
	mu.Lock()
	for _, r := range runs {
		if r.worker == "without" {
			t.Fatalf("the app's leader ran a task its program does not register")
		}
	}
	mu.Unlock()

	a, _ := e.newApp(1, nil)
	for _, c := range []struct {
		s    app.Schedule
		says string
	}{
		{app.Schedule{Lease: "x"}, "Lease needs LeaderOnly"},
		{app.Schedule{LeaderOnly: true, Lease: "a b"}, `lease name "a b" is invalid`},
	} {
		if err := a.Background("bad", func(context.Context) error { return nil }, c.s); err == nil || !strings.Contains(err.Error(), c.says) {
			t.Errorf("%+v: %v, want an error saying %q", c.s, err, c.says)
		}
	}
}
