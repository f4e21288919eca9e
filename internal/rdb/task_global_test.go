package rdb_test

import (
	"errors"
	"testing"
	"time"

	"github.com/leatdev/leat/internal/rdb"
)

// Under a global concurrency a fetch takes at most what the queue's active
// count leaves; with none left it fails with ErrGlobalFull and flags the
// wait, which the next WakeGlobalWaiters clears with one message on the
// queue's channel. Lifting the cap lets every fetch take what it asks.
func TestFetchUnderGlobalConcurrency(t *testing.T) {
	f := newFixture(t)
	for _, id := range []string{"t1", "t2", "t3", "t4", "t5"} {
		f.enqueue(rdb.NewTask{ID: id, Payload: []byte(`1`), Retention: time.Hour})
	}
	config, channel := f.ks.TaskConfig("q"), f.ks.TaskCancel("q")
	if err := rdb.SetLiveGlobal(f.ctx, f.c, config, 2); err != nil {
		t.Fatal(err)
	}
	read := func(w string, n int) ([]rdb.Fetched, error) {
		return rdb.FetchTasks(f.ctx, f.c, f.keys, w, rdb.Limits{}, rdb.NewCall(), []int{n}, n)
	}
	first, err := read("w1", 10)
	if err != nil || len(first) != 2 {
		t.Fatalf("first read: %d tasks, %v; want the cap of 2", len(first), err)
	}
	if got, err := read("w2", 10); !errors.Is(err, rdb.ErrGlobalFull) || len(got) != 0 {
		t.Fatalf("a read of another worker at the cap: %v, %v; want ErrGlobalFull", got, err)
	}
	if got, err := rdb.FetchOwn(f.ctx, f.c, f.keys, "w2", rdb.Limits{}, rdb.NewCall(), 1, 10); !errors.Is(err, rdb.ErrGlobalFull) || len(got) != 0 {
		t.Fatalf("own at the cap: %v, %v", got, err)
	}
	sub := f.c.Subscribe(f.ctx, channel)
	defer sub.Close()
	if _, err := sub.Receive(f.ctx); err != nil {
		t.Fatal(err)
	}
	// A task ends: the waiters are woken once.
	if st := f.finish("w1", first[0], rdb.OK); st != "succeeded" {
		t.Fatalf("finish: %q", st)
	}
	if woke, err := rdb.WakeGlobalWaiters(f.ctx, f.c, config, channel); err != nil || !woke {
		t.Fatalf("WakeGlobalWaiters = %v, %v; want the waiters woken", woke, err)
	}
	msg, err := sub.ReceiveMessage(f.ctx)
	if err != nil || msg.Payload != rdb.ResumeMessage {
		t.Fatalf("message %v, %v; want the resume message", msg, err)
	}
	if woke, err := rdb.WakeGlobalWaiters(f.ctx, f.c, config, channel); err != nil || woke {
		t.Fatalf("a second WakeGlobalWaiters = %v, %v; want nothing to wake", woke, err)
	}
	if got, err := read("w2", 10); err != nil || len(got) != 1 {
		t.Fatalf("a read with one slot free: %d tasks, %v; want 1", len(got), err)
	}
	if c := f.counts(); c["active"] != "2" || c["pending"] != "2" {
		t.Fatalf("counts %v, want 2 active and 2 pending", c)
	}
	if n, err := rdb.ReadLiveGlobal(f.ctx, f.c, config); err != nil || n != 2 {
		t.Fatalf("ReadLiveGlobal = %d, %v", n, err)
	}
	if err := rdb.ClearLiveGlobal(f.ctx, f.c, config); err != nil {
		t.Fatal(err)
	}
	if got, err := read("w2", 10); err != nil || len(got) != 2 {
		t.Fatalf("a read without the cap: %d tasks, %v; want the 2 left", len(got), err)
	}
}
