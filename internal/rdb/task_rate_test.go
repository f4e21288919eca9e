package rdb_test

import (
	"errors"
	"testing"
	"time"

	"github.com/leatdev/leat/internal/rdb"
	"github.com/redis/go-redis/v9"
)

// Under a queue rate limit a fetch takes at most what is left of the
// window's budget, every mode alike; with none left it fails with a
// RateLimitedError saying when the window ends, and the entries a blocking
// read gave stay pending with the worker, for its own call after the
// window.
func TestFetchUnderQueueRate(t *testing.T) {
	f := newFixture(t)
	for _, id := range []string{"t1", "t2", "t3", "t4", "t5", "t6", "t7"} {
		f.enqueue(rdb.NewTask{ID: id, Payload: []byte(`1`), Retention: time.Hour})
	}
	lim := rdb.Limits{Queue: rdb.Rate{N: 3, Window: time.Hour}}
	read := func() ([]rdb.Fetched, error) {
		return rdb.FetchTasks(f.ctx, f.c, f.keys, "w1", lim, rdb.NewCall(), []int{10}, 10)
	}
	given := func(n int64) ([]rdb.Fetched, error) {
		t.Helper()
		res, err := f.c.XReadGroup(f.ctx, &redis.XReadGroupArgs{
			Group: rdb.TaskGroup, Consumer: "w1", Streams: []string{f.ks.TaskStream("q", 0), ">"}, Count: n, Block: -1,
		}).Result()
		if err != nil {
			t.Fatal(err)
		}
		var es []rdb.Entry
		for _, m := range res[0].Messages {
			es = append(es, rdb.Entry{Level: 0, ID: m.ID, Field: "t", Value: m.Values["t"].(string)})
		}
		return rdb.FetchGiven(f.ctx, f.c, f.keys, "w1", lim, es)
	}
	counter := f.ks.TaskQueueRate("q")

	if got, err := read(); err != nil || len(got) != 3 {
		t.Fatalf("first read: %d tasks, %v; want the budget of 3", len(got), err)
	}
	var limited *rdb.RateLimitedError
	if got, err := read(); !errors.As(err, &limited) || len(got) != 0 || limited.Wait <= 0 || limited.Wait > time.Hour {
		t.Fatalf("read over the budget: %v, %v; want a RateLimitedError within the hour", got, err)
	}
	if got, err := given(1); !errors.As(err, &limited) || len(got) != 0 {
		t.Fatalf("given over the budget: %v, %v", got, err)
	}
	if got, err := rdb.FetchOwn(f.ctx, f.c, f.keys, "w1", lim, rdb.NewCall(), 1, 10); !errors.As(err, &limited) || len(got) != 0 {
		t.Fatalf("own over the budget: %v, %v", got, err)
	}
	if n := f.c.Get(f.ctx, counter).Val(); n != "3" {
		t.Fatalf("the window's count: %q, want 3", n)
	}

	// The window ends: the worker's own call takes the entry left pending,
	// within the new window's budget.
	f.c.Del(f.ctx, counter)
	if got, err := rdb.FetchOwn(f.ctx, f.c, f.keys, "w1", lim, rdb.NewCall(), 1, 10); err != nil || len(got) != 1 || got[0].ID != "t4" {
		t.Fatalf("own in a new window: %v, %v; want t4", got, err)
	}
	// Two left of the budget: of three entries given, two are taken.
	if got, err := given(3); err != nil || len(got) != 2 || got[0].ID != "t5" || got[1].ID != "t6" {
		t.Fatalf("given with two left: %v, %v; want t5 and t6", got, err)
	}
	if ttl := f.c.PTTL(f.ctx, counter).Val(); ttl <= 0 || ttl > time.Hour {
		t.Fatalf("the window's TTL %s", ttl)
	}
	if n := f.c.Get(f.ctx, counter).Val(); n != "3" {
		t.Fatalf("the new window's count: %q, want 3", n)
	}
	if c := f.counts(); c["active"] != "6" || c["pending"] != "1" {
		t.Fatalf("counts %v, want 6 active and 1 pending", c)
	}
	if p := f.c.XPending(f.ctx, f.ks.TaskStream("q", 0), rdb.TaskGroup).Val(); p.Consumers["w1"] != 7 {
		t.Fatalf("pending with w1: %+v, want 6 running and t7's entry kept", p)
	}
}

// A rate set live (the queue's live settings, field "rate") takes the place
// of the worker's: it limits a worker that has none, and "0 0" lifts the
// worker's own; once removed, the worker's applies again.
func TestFetchUnderLiveRate(t *testing.T) {
	f := newFixture(t)
	for _, id := range []string{"t1", "t2", "t3", "t4", "t5", "t6"} {
		f.enqueue(rdb.NewTask{ID: id, Payload: []byte(`1`), Retention: time.Hour})
	}
	conf, counter := f.ks.TaskConfig("q"), f.ks.TaskQueueRate("q")
	read := func(lim rdb.Limits, n int) ([]rdb.Fetched, error) {
		return rdb.FetchTasks(f.ctx, f.c, f.keys, "w1", lim, rdb.NewCall(), []int{n}, n)
	}
	live := func(r rdb.Rate) {
		t.Helper()
		if err := f.c.HSet(f.ctx, conf, rdb.RateField, rdb.LiveRate(r)).Err(); err != nil {
			t.Fatal(err)
		}
	}
	live(rdb.Rate{N: 2, Window: time.Hour})
	if got, err := read(rdb.Limits{}, 10); err != nil || len(got) != 2 {
		t.Fatalf("under a live rate of 2: %d tasks, %v", len(got), err)
	}
	var limited *rdb.RateLimitedError
	if got, err := read(rdb.Limits{}, 10); !errors.As(err, &limited) || len(got) != 0 || limited.Wait <= 0 || limited.Wait > time.Hour {
		t.Fatalf("over the live budget: %v, %v", got, err)
	}
	if ttl := f.c.PTTL(f.ctx, counter).Val(); ttl <= 59*time.Minute {
		t.Fatalf("the live window's TTL %s, want about an hour", ttl)
	}
	// No limit, set live, over a worker's own limit of 1.
	live(rdb.Rate{})
	own := rdb.Limits{Queue: rdb.Rate{N: 1, Window: time.Hour}}
	if got, err := read(own, 3); err != nil || len(got) != 3 {
		t.Fatalf("with the limit lifted live: %d tasks, %v; want 3", len(got), err)
	}
	// Removed: the worker's own limit applies again (its window is spent).
	f.c.HDel(f.ctx, conf, rdb.RateField)
	if got, err := read(own, 1); !errors.As(err, &limited) || len(got) != 0 {
		t.Fatalf("the worker's own limit, spent: %v, %v", got, err)
	}
	f.c.Del(f.ctx, counter)
	if got, err := read(own, 5); err != nil || len(got) != 1 || got[0].ID != "t6" {
		t.Fatalf("the worker's own limit in a new window: %v, %v; want t6 alone", got, err)
	}
	for _, text := range []string{"", "1", "a 1", "1 -1", "-1 5", "1 2 3"} {
		if _, err := rdb.ParseLiveRate(text); err == nil {
			t.Errorf("ParseLiveRate(%q) accepted", text)
		}
	}
	if r, err := rdb.ParseLiveRate(rdb.LiveRate(rdb.Rate{N: 7, Window: 1500 * time.Millisecond})); err != nil || r.N != 7 || r.Window != 1500*time.Millisecond {
		t.Errorf("LiveRate does not read back: %+v, %v", r, err)
	}
}
