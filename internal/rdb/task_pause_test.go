package rdb_test

import (
	"errors"
	"testing"
	"time"

	"github.com/leatdev/leat/internal/rdb"
	"github.com/redis/go-redis/v9"
)

// While a queue is paused every fetch takes nothing new and fails with
// ErrPaused: a read, the entries a blocking read gave (left pending with
// the worker), and the worker's own pending entries; a read call sent again
// after its reply was lost still hands out what its first run took. Once
// resumed, the worker's own call takes the entries left pending.
func TestFetchWhilePaused(t *testing.T) {
	f := newFixture(t)
	for _, id := range []string{"t1", "t2", "t3"} {
		f.enqueue(rdb.NewTask{ID: id, Payload: []byte(`1`), Retention: time.Hour})
	}
	call := rdb.NewCall()
	read := func(call string) ([]rdb.Fetched, error) {
		return rdb.FetchTasks(f.ctx, f.c, f.keys, "w1", rdb.Limits{}, call, []int{1}, 1)
	}
	first, err := read(call)
	if err != nil || len(first) != 1 || first[0].ID != "t1" {
		t.Fatalf("first read: %v, %v", first, err)
	}
	config := f.ks.TaskConfig("q")
	if err := f.c.HSet(f.ctx, config, "paused", time.Now().UnixMilli()).Err(); err != nil {
		t.Fatal(err)
	}
	if again, err := read(call); err != nil || len(again) != 1 || again[0].ID != "t1" {
		t.Fatalf("the first read sent again while paused: %v, %v; want t1 handed out again", again, err)
	}
	if got, err := read(rdb.NewCall()); !errors.Is(err, rdb.ErrPaused) || len(got) != 0 {
		t.Fatalf("read while paused: %v, %v; want ErrPaused", got, err)
	}
	// A blocking read's entries, given while paused.
	res, err := f.c.XReadGroup(f.ctx, &redis.XReadGroupArgs{
		Group: rdb.TaskGroup, Consumer: "w1", Streams: []string{f.ks.TaskStream("q", 0), ">"}, Count: 1, Block: -1,
	}).Result()
	if err != nil || len(res[0].Messages) != 1 {
		t.Fatalf("XREADGROUP: %v, %v", res, err)
	}
	m := res[0].Messages[0]
	given := []rdb.Entry{{Level: 0, ID: m.ID, Field: "t", Value: m.Values["t"].(string)}}
	if got, err := rdb.FetchGiven(f.ctx, f.c, f.keys, "w1", rdb.Limits{}, given); !errors.Is(err, rdb.ErrPaused) || len(got) != 0 {
		t.Fatalf("given while paused: %v, %v; want ErrPaused", got, err)
	}
	if got, err := rdb.FetchOwn(f.ctx, f.c, f.keys, "w1", rdb.Limits{}, rdb.NewCall(), 1, 10); !errors.Is(err, rdb.ErrPaused) || len(got) != 0 {
		t.Fatalf("own while paused: %v, %v; want ErrPaused", got, err)
	}
	if c := f.counts(); c["active"] != "1" || c["pending"] != "2" {
		t.Fatalf("counts while paused: %v, want t1 active and 2 pending", c)
	}
	if p := f.c.XPending(f.ctx, f.ks.TaskStream("q", 0), rdb.TaskGroup).Val(); p.Count != 2 || p.Consumers["w1"] != 2 {
		t.Fatalf("pending entries while paused: %+v, want t1's and t2's with w1", p)
	}

	if err := f.c.HDel(f.ctx, config, "paused").Err(); err != nil {
		t.Fatal(err)
	}
	own, err := rdb.FetchOwn(f.ctx, f.c, f.keys, "w1", rdb.Limits{}, rdb.NewCall(), 1, 10)
	if err != nil || len(own) != 1 || own[0].ID != m.Values["t"] {
		t.Fatalf("own after the resume: %v, %v; want the task of the entry given while paused", own, err)
	}
	if got := f.fetch("w1", 10); len(got) != 1 || got[0].ID != "t3" {
		t.Fatalf("read after the resume: %v, want t3", got)
	}
}
