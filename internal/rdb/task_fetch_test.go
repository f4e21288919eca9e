package rdb_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/leatdev/leat/internal/rdb"
	"github.com/redis/go-redis/v9"
)

// A read call sent again (its reply was lost) hands out the tasks of its
// first run again, not new ones (a key of any bytes included); a call with
// another ID reads new tasks.
func TestFetchCallRunAgain(t *testing.T) {
	f := newFixture(t)
	f.enqueue(rdb.NewTask{ID: "t1", Payload: []byte(`1`), Retention: time.Hour},
		rdb.NewTask{ID: "t2", Payload: []byte(`1`), Key: "a,b 2,\n,0,", Retention: time.Hour},
		rdb.NewTask{ID: "t3", Payload: []byte(`1`), Retention: time.Hour})
	call := rdb.NewCall()
	fetch := func(call string) []string { return f.fetchIDs(call, 2) }
	first := fetch(call)
	if len(first) != 2 {
		t.Fatalf("first run took %v, want 2 tasks", first)
	}
	if again := fetch(call); len(again) != 2 || again[0] != first[0] || again[1] != first[1] {
		t.Fatalf("the call run again took %v, want %v", again, first)
	}
	if next := fetch(rdb.NewCall()); len(next) != 1 || next[0] != "t3" {
		t.Fatalf("the next call took %v, want [t3]", next)
	}
	if n := f.counts()["active"]; n != "3" {
		t.Fatalf("%s tasks active, want 3 (counts %v)", n, f.counts())
	}
}

// A worker's read calls of different slots (its fetchers' calls under way
// at once) keep a memo each: a call sent again after its reply was lost
// hands out the tasks of its first run again even when a call of another
// slot ran in between, taking tasks or none. With one memo per worker, the
// other call's replaced or deleted it, and the first call's tasks stayed
// active with the worker, run by nobody until the visibility timeout.
func TestFetchCallsOfOtherSlots(t *testing.T) {
	f := newFixture(t)
	var tasks []rdb.NewTask
	for i := range 5 {
		tasks = append(tasks, rdb.NewTask{ID: fmt.Sprint("t", i), Payload: []byte(`1`), Retention: time.Hour})
	}
	f.enqueue(tasks...)
	fetch := f.fetchIDs
	x := rdb.NewCallIn(0)
	if got := fetch(x, 2); !slices.Equal(got, []string{"t0", "t1"}) {
		t.Fatalf("x took %v, want t0 and t1", got)
	}
	if got := fetch(rdb.NewCallIn(1), 2); !slices.Equal(got, []string{"t2", "t3"}) {
		t.Fatalf("y took %v, want t2 and t3", got)
	}
	if got := fetch(x, 2); !slices.Equal(got, []string{"t0", "t1"}) {
		t.Fatalf("x sent again after y took tasks: %v, want t0 and t1", got)
	}
	z := rdb.NewCallIn(0)
	if got := fetch(z, 1); !slices.Equal(got, []string{"t4"}) {
		t.Fatalf("z took %v, want t4", got)
	}
	if got := fetch(rdb.NewCallIn(1), 2); len(got) != 0 {
		t.Fatalf("a call with nothing ready took %v", got)
	}
	if got := fetch(z, 1); !slices.Equal(got, []string{"t4"}) {
		t.Fatalf("z sent again after a call that took nothing: %v, want t4", got)
	}
}

// An own call (the recovery of entries a lost blocking read left pending
// with the worker) sent again after its reply was lost hands out the tasks
// of its first run again: they are active with the worker now, which a new
// own call skips as tasks it runs, so without the memo they stayed active,
// run by nobody until the visibility timeout.
func TestFetchOwnCallRunAgain(t *testing.T) {
	f := newFixture(t)
	f.enqueue(rdb.NewTask{ID: "t1", Payload: []byte(`1`), Retention: time.Hour},
		rdb.NewTask{ID: "t2", Payload: []byte(`1`), Retention: time.Hour},
		rdb.NewTask{ID: "t3", Payload: []byte(`1`), Retention: time.Hour})
	// a blocking read's entries, whose reply was lost
	if err := f.c.XReadGroup(f.ctx, &redis.XReadGroupArgs{
		Group: rdb.TaskGroup, Consumer: "w1", Streams: []string{f.ks.TaskStream("q", 0), ">"}, Count: 10, Block: -1,
	}).Err(); err != nil {
		t.Fatal(err)
	}
	own := func(call string, n int) []string {
		return f.ids(rdb.FetchOwn(f.ctx, f.c, f.keys, "w1", rdb.Limits{}, call, 1, n))
	}
	x := rdb.NewCallIn(0)
	if got := own(x, 2); !slices.Equal(got, []string{"t1", "t2"}) {
		t.Fatalf("own call took %v, want t1 and t2", got)
	}
	if got := own(rdb.NewCallIn(1), 2); !slices.Equal(got, []string{"t3"}) {
		t.Fatalf("an own call of another slot took %v, want t3 (t1 and t2 are active here)", got)
	}
	if got := own(x, 0); !slices.Equal(got, []string{"t1", "t2"}) {
		t.Fatalf("the own call sent again took %v, want t1 and t2", got)
	}
	if n := f.counts()["active"]; n != "3" {
		t.Fatalf("%s tasks active, want 3 (counts %v)", n, f.counts())
	}
}

// A level that gave fewer tasks than its quota has nothing more ready: a
// read call does not read it a second time to fill its total.
func TestFetchReadsDrainedLevelOnce(t *testing.T) {
	p := newPrivateQueue(t)
	p.enqueue(t, 3)
	p.run(t, 1) // scripts cached
	p.resetStats(t)
	got, err := rdb.FetchTasks(p.ctx, p.c, p.keys, "w1", rdb.Limits{}, rdb.NewCall(), []int{10}, 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 {
		t.Fatalf("took %d tasks, want 2", len(got))
	}
	if calls, _ := p.stats(t); calls["xreadgroup"] != 1 {
		t.Fatalf("%d XREADGROUPs for one level with fewer tasks than asked, want 1 (%v)", calls["xreadgroup"], calls)
	}
}

// A key's token that a read adds while it takes tasks (the key's head task
// was gone, so the token moved to the next one) is read by the same call.
func TestFetchReadsTokenAddedByRead(t *testing.T) {
	f := newFixture(t)
	f.enqueue(rdb.NewTask{ID: "t1", Payload: []byte(`1`), Key: "k", Retention: time.Hour},
		rdb.NewTask{ID: "t2", Payload: []byte(`2`), Key: "k", Retention: time.Hour})
	if err := f.c.Del(f.ctx, f.ks.TaskPrefix("q")+"t1").Err(); err != nil {
		t.Fatal(err)
	}
	got := f.fetch("w1", 10)
	if len(got) != 1 || got[0].ID != "t2" {
		t.Fatalf("took %v, want t2", got)
	}
}

// fetchIDs runs a read call of worker w1 for up to n tasks and returns the
// IDs of those it took.
func (f *fixture) fetchIDs(call string, n int) []string {
	f.t.Helper()
	return f.ids(rdb.FetchTasks(f.ctx, f.c, f.keys, "w1", rdb.Limits{}, call, []int{n}, n))
}

// ids returns the IDs of the tasks a fetch took, failing the test on its
// error.
func (f *fixture) ids(got []rdb.Fetched, err error) []string {
	f.t.Helper()
	if err != nil {
		f.t.Fatal(err)
	}
	var ids []string
	for _, g := range got {
		ids = append(ids, g.ID)
	}
	return ids
}
