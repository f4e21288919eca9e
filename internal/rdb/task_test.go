package rdb_test

import (
	"context"
	"testing"
	"time"

	"github.com/leatdev/leat/internal/rdb"
	"github.com/leatdev/leat/internal/tools/redistest"
	"github.com/redis/go-redis/v9"
)

type fixture struct {
	t    *testing.T
	c    *redis.Client
	ks   rdb.KeySpace
	keys []string
	enq  rdb.Target
	ctx  context.Context
	// mostActive is the most tasks of one key checkWindow saw active
	mostActive int
}

func newFixture(t *testing.T) *fixture {
	t.Parallel()
	c, prefix := redistest.Client(t)
	return fixtureOn(t, c, prefix)
}

// fixtureOn returns a fixture of queue q of app "app" under prefix, its
// first level's stream and group created.
func fixtureOn(t *testing.T, c *redis.Client, prefix string) *fixture {
	ks := rdb.NewKeySpace(prefix, "app")
	f := &fixture{t: t, c: c, ks: ks, keys: rdb.Keys(ks, "q"), enq: rdb.EnqueueTarget(ks, "q"), ctx: context.Background()}
	if err := c.XGroupCreateMkStream(f.ctx, ks.TaskStream("q", 0), rdb.TaskGroup, "0").Err(); err != nil {
		t.Fatal(err)
	}
	return f
}

func (f *fixture) enqueue(tasks ...rdb.NewTask) {
	f.t.Helper()
	created, _, err := rdb.Enqueue(f.ctx, f.c, f.enq, tasks)
	if err != nil {
		f.t.Fatal(err)
	}
	for i, ok := range created {
		if !ok {
			f.t.Fatalf("task %s not created", tasks[i].ID)
		}
	}
}

func (f *fixture) fetch(consumer string, n int) []rdb.Fetched {
	f.t.Helper()
	got, err := rdb.FetchTasks(f.ctx, f.c, f.keys, consumer, rdb.Limits{}, rdb.NewCall(), []int{n}, n)
	if err != nil {
		f.t.Fatal(err)
	}
	return got
}

// finish records kind for t's run and returns the state it left the task
// in ("" when not recorded).
func (f *fixture) finish(consumer string, t rdb.Fetched, kind string) string {
	f.t.Helper()
	v, err := rdb.FinishCmd(f.ctx, f.c, f.keys, consumer, 100, time.Hour, []rdb.Outcome{{ID: t.ID, Entry: t.Entry, Level: t.Level, Kind: kind, Data: []byte(`1`)}}).StringSlice()
	if err != nil {
		f.t.Fatal(err)
	}
	return v[0]
}

func (f *fixture) reclaimAll() {
	f.t.Helper()
	if _, _, _, err := rdb.Reclaim(f.ctx, f.c, f.keys, "reclaimer", 0, 100, 0, "0-0", 100, time.Hour); err != nil {
		f.t.Fatal(err)
	}
}

func (f *fixture) counts() map[string]string { return f.c.HGetAll(f.ctx, f.ks.TaskCounts("q")).Val() }

// A run reclaimed from a frozen worker that finishes late still counts as
// the task's success; the key's token then passes on exactly once, when the
// reclaimed copy's run ends.
func TestLateSuccessKeyed(t *testing.T) {
	f := newFixture(t)
	f.enqueue(rdb.NewTask{ID: "t1", Payload: []byte(`1`), Key: "k", Retention: time.Hour, MaxRetries: 3},
		rdb.NewTask{ID: "t2", Payload: []byte(`2`), Key: "k", Retention: time.Hour, MaxRetries: 3})
	a := f.fetch("A", 10)
	if len(a) != 1 || a[0].ID != "t1" {
		t.Fatalf("A got %+v", a)
	}
	f.reclaimAll() // A froze
	b := f.fetch("B", 10)
	if len(b) != 1 || b[0].ID != "t1" || b[0].Attempt != 2 {
		t.Fatalf("B got %+v", b)
	}
	if got := f.fetch("C", 10); len(got) != 0 {
		t.Fatalf("a second token: C got %+v", got)
	}
	if f.finish("A", a[0], rdb.OK) != "succeeded" { // A's late success counts
		t.Fatal("late success not recorded")
	}
	if got := f.fetch("C", 10); len(got) != 0 {
		t.Fatalf("the token passed on while B still runs t1: C got %+v", got)
	}
	if f.finish("B", b[0], rdb.OK) != "" {
		t.Fatal("second success recorded")
	}
	c := f.fetch("C", 10)
	if len(c) != 1 || c[0].ID != "t2" {
		t.Fatalf("C got %+v, want t2", c)
	}
	f.finish("C", c[0], rdb.OK)
	if n := f.c.XLen(f.ctx, f.ks.TaskStream("q", 0)).Val(); n != 0 {
		t.Fatalf("%d entries left", n)
	}
	if n := f.c.Exists(f.ctx, f.ks.TaskKeys("q"), f.ks.TaskKeyPrefix("q")+"k").Val(); n != 0 {
		t.Fatalf("%d key structures left", n)
	}
	if c := f.counts(); c["succeeded"] != "2" || c["active"] != "0" || c["pending"] != "0" {
		t.Fatalf("counts %v", c)
	}
}

// When the run holding a key's token after a late success is reclaimed in
// turn, the reclaimer passes the token on, and that run's own outcome,
// arriving later, does not pass it on a second time.
func TestLateSuccessKeyedRunReclaimed(t *testing.T) {
	f := newFixture(t)
	f.enqueue(rdb.NewTask{ID: "t1", Payload: []byte(`1`), Key: "k0", Retention: time.Hour, MaxRetries: 3},
		rdb.NewTask{ID: "t2", Payload: []byte(`2`), Key: "k0", Retention: time.Hour, MaxRetries: 3})
	a := f.fetch("A", 10)
	f.reclaimAll() // A froze
	b := f.fetch("B", 10)
	if len(b) != 1 || b[0].ID != "t1" {
		t.Fatalf("B got %+v", b)
	}
	if f.finish("A", a[0], rdb.OK) != "succeeded" {
		t.Fatal("late success not recorded")
	}
	f.reclaimAll() // B froze too: the token goes to t2
	for _, kind := range []string{rdb.OK, rdb.Fail} {
		if st := f.finish("B", b[0], kind); st != "" {
			t.Fatalf("B's late %s recorded as %q", kind, st)
		}
		if err := f.check(); err != nil {
			t.Fatal(err)
		}
	}
	c := f.fetch("C", 10)
	if len(c) != 1 || c[0].ID != "t2" {
		t.Fatalf("C got %+v, want t2", c)
	}
	if got := f.fetch("D", 10); len(got) != 0 {
		t.Fatalf("a second token: D got %+v", got)
	}
	f.finish("C", c[0], rdb.OK)
	if err := f.check(); err != nil {
		t.Fatal(err)
	}
	if c := f.counts(); c["succeeded"] != "2" || c["active"] != "0" || c["pending"] != "0" {
		t.Fatalf("counts %v", c)
	}
}

// An unkeyed task reclaimed and not taken yet is not run again after a
// late success; a late failure of a reclaimed run is ignored.
func TestLateOutcomes(t *testing.T) {
	f := newFixture(t)
	f.enqueue(rdb.NewTask{ID: "t1", Payload: []byte(`1`), Retention: time.Hour, MaxRetries: 3},
		rdb.NewTask{ID: "t2", Payload: []byte(`2`), Retention: time.Hour, MaxRetries: 3})
	a := f.fetch("A", 10)
	f.reclaimAll()
	if f.finish("A", a[0], rdb.OK) != "succeeded" {
		t.Fatal("late success not recorded")
	}
	if f.finish("A", a[1], rdb.Retry) != "" {
		t.Fatal("late failure recorded")
	}
	got := f.fetch("B", 10)
	if len(got) != 1 || got[0].ID != "t2" {
		t.Fatalf("B got %+v, want only t2", got)
	}
	f.finish("B", got[0], rdb.OK)
	if c := f.counts(); c["succeeded"] != "2" || c["active"] != "0" || c["pending"] != "0" {
		t.Fatalf("counts %v", c)
	}
	if n := f.c.XLen(f.ctx, f.ks.TaskStream("q", 0)).Val(); n != 0 {
		t.Fatalf("%d entries left", n)
	}
}
