package rdb_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/leatdev/leat/internal/rdb"
	"github.com/redis/go-redis/v9"
)

func (f *fixture) streamLen() int64 {
	f.t.Helper()
	n, err := f.c.XLen(f.ctx, f.ks.TaskStream("q", 0)).Result()
	if err != nil {
		f.t.Fatal(err)
	}
	return n
}

// finishLast records the success of the last task running and checks that
// the ready stream is then empty.
func (f *fixture) finishLast(last rdb.Fetched) {
	f.t.Helper()
	f.finish("w1", last, rdb.OK)
	if n := f.streamLen(); n != 0 {
		f.t.Fatalf("%d entries left with every task finished", n)
	}
}

// The entries of finished tasks leave the ready stream by trimming: those
// behind a task still running stay until it ends, then all go.
func TestTrimUpToOldestPending(t *testing.T) {
	f := newFixture(t)
	for _, id := range []string{"t1", "t2", "t3", "t4", "t5"} {
		f.enqueue(rdb.NewTask{ID: id, Payload: []byte(`1`), Retention: time.Hour})
	}
	got := f.fetch("w1", 5)
	if len(got) != 5 || got[0].ID != "t1" {
		t.Fatalf("took %v", got)
	}
	for _, g := range got[1:] {
		if st := f.finish("w1", g, rdb.OK); st != "succeeded" {
			t.Fatalf("%s: %q", g.ID, st)
		}
	}
	if n := f.streamLen(); n != 5 {
		t.Fatalf("%d entries with t1 running, want 5 (t1's, and the four behind it)", n)
	}
	f.finishLast(got[0])
}

// takeOld adds a task whose ready entry was added long ago (entry IDs are
// server times: the head of an old backlog), and takes it.
func (f *fixture) takeOld() rdb.Fetched {
	f.t.Helper()
	stream := f.ks.TaskStream("q", 0)
	if err := f.c.XAdd(f.ctx, &redis.XAddArgs{Stream: stream, ID: "1-0", Values: []any{"t", "old"}}).Err(); err != nil {
		f.t.Fatal(err)
	}
	if err := f.c.HSet(f.ctx, f.ks.TaskPrefix("q")+"old", "s", "pending", "p", "1", "l", "0", "x", "1-0",
		"a", "0", "r", "0", "to", "0", "ret", "3600000", "u", "", "k", "", "e", "1", "d", "1").Err(); err != nil {
		f.t.Fatal(err)
	}
	got := f.fetch("w1", 1)
	if len(got) != 1 || got[0].ID != "old" {
		f.t.Fatalf("took %v", got)
	}
	return got[0]
}

// finishThree enqueues, takes and finishes three tasks.
func (f *fixture) finishThree() {
	f.t.Helper()
	for _, id := range []string{"t1", "t2", "t3"} {
		f.enqueue(rdb.NewTask{ID: id, Payload: []byte(`1`), Retention: time.Hour})
	}
	for _, g := range f.fetch("w1", 3) {
		f.finish("w1", g, rdb.OK)
	}
}

// A task running for long (longer than the trim lag) does not hold back the
// entries of the tasks finished meanwhile: they are deleted.
func TestTrimPastLongTask(t *testing.T) {
	f := newFixture(t)
	long := f.takeOld()
	// it started 10s ago
	now, err := f.c.Time(f.ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	if err := f.c.HSet(f.ctx, f.ks.TaskPrefix("q")+"old", "st", now.Add(-10*time.Second).UnixMilli()).Err(); err != nil {
		t.Fatal(err)
	}
	f.finishThree()
	if n := f.streamLen(); n != 1 {
		t.Fatalf("%d entries with the long task running, want 1 (its own)", n)
	}
	f.finishLast(long)
}

// The entry at the head of an old backlog is old, but its task was just
// taken: it holds trimming back as any task's entry does (the entries
// finished behind it leave the stream with it, by trimming), and no XDEL
// is spent on them: a backlog drained after an outage pays no XDEL per
// finish call.
func TestTrimBehindOldBacklog(t *testing.T) {
	f := newFixture(t)
	first := f.takeOld()
	f.finishThree()
	if n := f.streamLen(); n != 4 {
		t.Fatalf("%d entries behind a task of an old backlog just taken, want 4 (deleted one by one: 1)", n)
	}
	f.finishLast(first)
}

// An outcome is recorded when its ready stream, or the stream's group, was
// deleted meanwhile: there is nothing to trim.
func TestFinishWithoutStream(t *testing.T) {
	for _, gone := range []string{"stream", "group"} {
		t.Run(gone, func(t *testing.T) {
			f := newFixture(t)
			f.enqueue(rdb.NewTask{ID: "t1", Payload: []byte(`1`), Retention: time.Hour},
				rdb.NewTask{ID: "t2", Payload: []byte(`1`), Retention: time.Hour})
			got := f.fetch("w1", 2)
			if len(got) != 2 {
				t.Fatalf("took %v", got)
			}
			f.finish("w1", got[0], rdb.OK) // one still pending
			stream := f.ks.TaskStream("q", 0)
			var err error
			if gone == "stream" {
				err = f.c.Del(f.ctx, stream).Err()
			} else {
				err = f.c.XGroupDestroy(f.ctx, stream, rdb.TaskGroup).Err()
			}
			if err != nil {
				t.Fatal(err)
			}
			if st := f.finish("w1", got[1], rdb.OK); st != "succeeded" {
				t.Fatalf("recorded as %q, want succeeded", st)
			}
		})
	}
}

// While a task runs, the entries finished before its own leave the stream
// by whole nodes: at most a node's worth of them stays (the node holding
// the running task's entry), and the stream does not grow with the tasks
// finished before it. Once nothing is pending, none stays.
func TestTrimByNodes(t *testing.T) {
	f := newFixture(t)
	const n = 250
	var tasks []rdb.NewTask
	for i := range n {
		tasks = append(tasks, rdb.NewTask{ID: fmt.Sprintf("t%03d", i), Payload: []byte(`1`), Retention: time.Hour})
	}
	f.enqueue(tasks...)
	got := f.fetch("w1", n)
	if len(got) != n {
		t.Fatalf("took %d of %d", len(got), n)
	}
	const running = 150
	for i, g := range got {
		if i != running {
			f.finish("w1", g, rdb.OK)
		}
	}
	stream := f.ks.TaskStream("q", 0)
	before := f.c.XRangeN(f.ctx, stream, "-", "("+got[running].Entry, streamNodeEntries).Val()
	if len(before) >= streamNodeEntries {
		t.Fatalf("%d entries or more left before the running task's, want fewer than a node's %d", len(before), streamNodeEntries)
	}
	if l := f.streamLen(); l != int64(len(before)+n-running) {
		t.Fatalf("%d entries, want %d: %d before the running task's, its own and the %d after it", l, len(before)+n-running, len(before), n-running-1)
	}
	f.finishLast(got[running])
}
