package app_test

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/leatdev/leat/app"
	"github.com/leatdev/leat/internal/lease"
	"github.com/leatdev/leat/internal/tools/redistest"
	"github.com/leatdev/leat/stream"
)

// Lock values are fresh per acquisition, not identities: two workers
// started with the same worker ID, or with IDs where one is a prefix of the
// other, never both lead and never both own a partition.
func TestWorkersSharingAnIDNeverBothLeadOrOwn(t *testing.T) {
	t.Parallel()
	for _, ids := range [][2]string{{"w-1", "w-1"}, {"w-10", "w-1"}} {
		t.Run(ids[0]+"_"+ids[1], func(t *testing.T) {
			t.Parallel()
			env := newEnv(t)
			var apps []*app.App
			for _, id := range ids {
				a, s := env.newApp(4, func(c *app.Config) { c.WorkerID = id })
				if err := app.Process(a, s, "p", func(ctx context.Context, ev *stream.Events[event]) error {
					for range ev.All() {
					}
					return nil
				}); err != nil {
					t.Fatal(err)
				}
				apps = append(apps, a)
				startWorker(t, a)
				if len(apps) == 1 {
					redistest.Eventually(t, 10*time.Second, "the first worker leads", a.IsLeader)
				}
			}
			owned := func(a *app.App) []int {
				var out []int
				for _, e := range a.Executors() {
					out = append(out, e.Owned()...)
				}
				return out
			}
			redistest.Eventually(t, 10*time.Second, "both workers own partitions", func() bool {
				return len(owned(apps[0])) > 0 && len(owned(apps[1])) > 0
			})
			for range 40 { // two lease refresh rounds
				if apps[0].IsLeader() && apps[1].IsLeader() {
					t.Fatal("both workers lead")
				}
				a, b := owned(apps[0]), owned(apps[1])
				for _, p := range a {
					if slices.Contains(b, p) {
						t.Fatalf("both workers own partition %d (%v, %v)", p, a, b)
					}
				}
				time.Sleep(50 * time.Millisecond)
			}
			// The lease names its holder for inspect and logs.
			v, err := env.client.Get(context.Background(), app.Keys(apps[0]).Leader()).Result()
			if err != nil || lease.Holder(v) != ids[0] {
				t.Fatalf("leader lease %q (%v), want held by %s", v, err, ids[0])
			}
		})
	}
}

// A leader-only task's context carries the leader term, which grows from
// one leader to the next; the task is waited for before the lease is
// released on a graceful stop, so the next leader never overlaps with it.
func TestLeaderTermAndHandOver(t *testing.T) {
	t.Parallel()
	env := newEnv(t)
	var mu sync.Mutex
	running := map[int]bool{}
	overlap := false
	var terms []int64
	var ws []*worker
	for i := range 2 {
		a, _ := env.newApp(2, nil)
		err := a.Background("lead", func(ctx context.Context) error {
			term, ok := app.LeaderTerm(ctx)
			mu.Lock()
			for j, r := range running {
				if r && j != i {
					overlap = true
				}
			}
			running[i] = true
			if ok {
				terms = append(terms, term)
			}
			mu.Unlock()
			<-ctx.Done()
			time.Sleep(300 * time.Millisecond) // cleans up after its context ended
			mu.Lock()
			running[i] = false
			mu.Unlock()
			return nil
		}, app.Schedule{LeaderOnly: true})
		if err != nil {
			t.Fatal(err)
		}
		ws = append(ws, startWorker(t, a))
		if i == 0 {
			redistest.Eventually(t, 10*time.Second, "the first term", func() bool { mu.Lock(); defer mu.Unlock(); return len(terms) == 1 })
		}
	}
	ws[0].stop(t)
	redistest.Eventually(t, 10*time.Second, "the second term", func() bool { mu.Lock(); defer mu.Unlock(); return len(terms) == 2 })
	mu.Lock()
	defer mu.Unlock()
	if overlap {
		t.Error("the next leader started the task while the previous leader's was still running")
	}
	if terms[1] <= terms[0] {
		t.Errorf("terms %v do not grow", terms)
	}
}
