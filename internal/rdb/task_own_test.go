package rdb_test

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/leatdev/leat/internal/rdb"
	"github.com/leatdev/leat/internal/tools/redistest"
	"github.com/redis/go-redis/v9"
)

// A recovery spread over many own calls by a rate limit walks the worker's
// pending list once, not on every call: with 10,000 tasks running (their
// entries pending with the worker) and a lost blocking read's entries after
// them, the first own call walks past the running tasks' entries, and each
// call after it, taking one task per window, looks at a handful of entries.
// (Every call walked the whole list: 10,000 HGETs each.) The recovery still
// takes every entry left pending, in order, each call those its budget
// allows, and a later lost read's entries too.
func TestOwnCallsWalkPendingOnce(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t) // commandstats of these calls alone
	c := srv.Client(t)
	f := fixtureOn(t, c, "own")
	ks, stream := f.ks, f.ks.TaskStream("q", 0)
	const running = 10_000
	for b := range running / 1000 {
		tasks := make([]rdb.NewTask, 1000)
		for i := range tasks {
			tasks[i] = rdb.NewTask{ID: fmt.Sprintf("r%05d", b*1000+i), Payload: []byte(`1`), Retention: time.Hour}
		}
		f.enqueue(tasks...)
	}
	if got := f.fetch("w1", running); len(got) != running {
		t.Fatalf("took %d tasks, want %d", len(got), running)
	}
	lostRead := func(ids ...string) {
		t.Helper()
		for _, id := range ids {
			f.enqueue(rdb.NewTask{ID: id, Payload: []byte(`1`), Retention: time.Hour})
		}
		if err := c.XReadGroup(f.ctx, &redis.XReadGroupArgs{
			Group: rdb.TaskGroup, Consumer: "w1", Streams: []string{stream, ">"}, Count: 100, Block: -1,
		}).Err(); err != nil {
			t.Fatal(err)
		}
	}
	lostRead("a1", "a2", "a3", "a4")

	lim := rdb.Limits{Queue: rdb.Rate{N: 1, Window: time.Hour}}
	// own runs an own call in a new window (a budget of 1) and returns the
	// tasks it took, and how many HGETs and XREADGROUPs it ran.
	own := func() (ids []string, hgets, reads int) {
		t.Helper()
		if err := c.Del(f.ctx, ks.TaskQueueRate("q")).Err(); err != nil {
			t.Fatal(err)
		}
		if err := c.ConfigResetStat(f.ctx).Err(); err != nil {
			t.Fatal(err)
		}
		got, err := rdb.FetchOwn(f.ctx, c, f.keys, "w1", lim, rdb.NewCall(), 1, 10)
		if err != nil {
			t.Fatal(err)
		}
		for _, g := range got {
			ids = append(ids, g.ID)
		}
		stats := c.Info(f.ctx, "commandstats").Val()
		return ids, calls(t, stats, "hget"), calls(t, stats, "xreadgroup")
	}

	if ids, hgets, _ := own(); !slices.Equal(ids, []string{"a1"}) || hgets < running {
		t.Fatalf("the first own call took %v with %d HGETs; want a1, past the %d running tasks' entries", ids, hgets, running)
	}
	for _, want := range []string{"a2", "a3", "a4"} {
		ids, hgets, reads := own()
		if !slices.Equal(ids, []string{want}) {
			t.Fatalf("own call took %v, want %s", ids, want)
		}
		if hgets > 2 || reads > 2 {
			t.Fatalf("own call taking %s ran %d HGETs and %d XREADGROUPs: it walked the pending list again", want, hgets, reads)
		}
	}
	if ids, hgets, _ := own(); len(ids) != 0 || hgets > 0 {
		t.Fatalf("own call with nothing left took %v with %d HGETs", ids, hgets)
	}

	// A later lost read: its entries come after where the walk left off.
	lostRead("b1", "b2")
	for _, want := range []string{"b1", "b2"} {
		if ids, hgets, _ := own(); !slices.Equal(ids, []string{want}) || hgets > 2 {
			t.Fatalf("own call took %v with %d HGETs, want %s", ids, hgets, want)
		}
	}
	if n := f.counts()["active"]; n != strconv.Itoa(running+6) {
		t.Fatalf("%s tasks active, want %d", n, running+6)
	}
}

// calls returns the calls of command cmd in an INFO commandstats reply.
func calls(t *testing.T, stats, cmd string) int {
	t.Helper()
	m := regexp.MustCompile(`cmdstat_` + cmd + `:calls=(\d+)`).FindStringSubmatch(stats)
	if m == nil {
		return 0
	}
	n, err := strconv.Atoi(m[1])
	if err != nil {
		t.Fatal(err)
	}
	return n
}
