package rdb_test

import (
	"strconv"
	"testing"
	"time"

	"github.com/leatdev/leat/internal/rdb"
)

// TestEnqueueRunAgain: running an enqueue call again (its reply was lost)
// reports a task that carries the call's token as created, and creates
// nothing; a task with the same ID or unique key and another token, or
// none, is a duplicate.
func TestEnqueueRunAgain(t *testing.T) {
	f := newFixture(t)
	task := func(id, token, unique string) rdb.NewTask {
		return rdb.NewTask{ID: id, Payload: []byte(`1`), Retention: time.Hour, Token: token,
			UniqueKey: unique, UniqueTTL: time.Hour}
	}
	f.enqueue(task("a", "tok-a", ""), task("b", "", ""), task("c", "tok-c", "u"))
	for _, tc := range []struct {
		name    string
		task    rdb.NewTask
		created bool
		id      string
	}{
		{"same ID, same token", task("a", "tok-a", ""), true, "a"},
		{"same ID, another token", task("a", "tok-x", ""), false, "a"},
		{"same ID, no token", task("a", "", ""), false, "a"},
		{"same ID without a token, a token now", task("b", "tok-b", ""), false, "b"},
		{"unique key and token of the task", task("c", "tok-c", "u"), true, "c"},
		{"unique key, another ID with the token", task("d", "tok-c", "u"), false, "c"},
	} {
		created, ids, err := rdb.Enqueue(f.ctx, f.c, f.enq, []rdb.NewTask{tc.task})
		if err != nil {
			t.Fatal(err)
		}
		if created[0] != tc.created || ids[0] != tc.id {
			t.Errorf("%s: created %v, ID %q; want %v, %q", tc.name, created[0], ids[0], tc.created, tc.id)
		}
	}
	if n, err := f.c.HGet(f.ctx, f.ks.TaskCounts("q"), "pending").Int(); err != nil || n != 3 {
		t.Fatalf("pending count %d (%v), want 3: a task created twice", n, err)
	}
	if s, err := f.c.XLen(f.ctx, f.ks.TaskStream("q", 0)).Result(); err != nil || s != 3 {
		t.Fatalf("ready entries %d (%v), want 3", s, err)
	}
}

// A task ready now is written with one HSET, its ready entry's ID
// included; one scheduled for later gets no entry, and its due time is the
// run-at given.
func TestEnqueueWritesHashOnce(t *testing.T) {
	p := newPrivateQueue(t)
	p.enqueue(t, 1) // script cached
	p.resetStats(t)
	at := time.Now().Add(time.Hour).Truncate(time.Millisecond)
	created, _, err := rdb.Enqueue(p.ctx, p.c, p.enq, []rdb.NewTask{
		{ID: "ready", Payload: []byte(`1`), Retention: time.Hour},
		{ID: "later", Payload: []byte(`2`), Retention: time.Hour, RunAt: at},
	})
	if err != nil || len(created) != 2 || !created[0] || !created[1] {
		t.Fatalf("enqueue: %v %v", created, err)
	}
	if calls, _ := p.stats(t); calls["hset"] != 2 || calls["xadd"] != 1 {
		t.Errorf("%d HSETs and %d XADDs for a ready task and a scheduled one, want 2 and 1 (%v)", calls["hset"], calls["xadd"], calls)
	}
	ready, err := p.c.HGetAll(p.ctx, p.keys[0]+"ready").Result()
	if err != nil {
		t.Fatal(err)
	}
	entries, err := p.c.XRange(p.ctx, p.keys[1]+"0", "-", "+").Result()
	if err != nil || len(entries) == 0 {
		t.Fatalf("ready stream: %v %v", entries, err)
	}
	last := entries[len(entries)-1]
	if ready["s"] != "pending" || ready["x"] != last.ID || ready["l"] != "0" || ready["a"] != "0" || ready["d"] != ready["e"] || last.Values["t"] != "ready" {
		t.Errorf("ready task's hash %v, last entry %v", ready, last)
	}
	later, err := p.c.HGetAll(p.ctx, p.keys[0]+"later").Result()
	if err != nil {
		t.Fatal(err)
	}
	if later["s"] != "scheduled" || later["x"] != "" || later["d"] != strconv.FormatInt(at.UnixMilli(), 10) {
		t.Errorf("scheduled task's hash %v, want state scheduled, no entry, due %d", later, at.UnixMilli())
	}
	if score, err := p.c.ZScore(p.ctx, p.keys[2], "later").Result(); err != nil || int64(score) != at.UnixMilli() {
		t.Errorf("scheduled set score %v (%v), want %d", score, err, at.UnixMilli())
	}
}
