package rdb_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/leatdev/leat/internal/rdb"
	"github.com/leatdev/leat/internal/tools/redistest"
	"github.com/redis/go-redis/v9"
)

func TestMain(m *testing.M) { redistest.Main(m) }

// A fenced write lands only while the lock holds the writer's value, and
// not at all otherwise.
func TestFenced(t *testing.T) {
	t.Parallel()
	c, prefix := redistest.Client(t)
	ctx := context.Background()
	lock, data := prefix+":lock:{x}", prefix+":data:{x}"
	write := func(v string) func(redis.Pipeliner) error {
		return func(pipe redis.Pipeliner) error { pipe.RPush(ctx, data, v); return nil }
	}
	if err := rdb.Fenced(ctx, c, lock, "mine", write("no lock")); !errors.Is(err, rdb.ErrNotHeld) {
		t.Fatalf("without the lock: %v", err)
	}
	c.Set(ctx, lock, "mine", time.Minute)
	if err := rdb.Fenced(ctx, c, lock, "mine", write("held")); err != nil {
		t.Fatal(err)
	}
	c.Set(ctx, lock, "theirs", time.Minute)
	if err := rdb.Fenced(ctx, c, lock, "mine", write("taken over")); !errors.Is(err, rdb.ErrNotHeld) {
		t.Fatalf("after a takeover: %v", err)
	}
	if got := c.LRange(ctx, data, 0, -1).Val(); len(got) != 1 || got[0] != "held" {
		t.Fatalf("writes %v, want only the one made while holding the lock", got)
	}
}

// Stop reports carry the server's time and are read back and cleared.
func TestGroupReports(t *testing.T) {
	t.Parallel()
	c, prefix := redistest.Client(t)
	ctx := context.Background()
	g := rdb.NewGroup(c, rdb.NewKeySpace(prefix, "shop"), "orders", "totals")
	if b, err := g.Report(ctx, 3); b != nil || err != nil {
		t.Fatalf("no report yet: %q, %v", b, err)
	}
	before, _ := rdb.ServerTime(ctx, c)
	var stamped time.Time
	if err := g.WriteReport(ctx, 3, func(now time.Time) ([]byte, error) { stamped = now; return []byte("halted"), nil }); err != nil {
		t.Fatal(err)
	}
	if stamped.Before(before) {
		t.Fatalf("report time %v before the server time %v read earlier", stamped, before)
	}
	if b, err := g.Report(ctx, 3); string(b) != "halted" || err != nil {
		t.Fatalf("report %q, %v", b, err)
	}
	if err := g.ClearReport(ctx, 3); err != nil {
		t.Fatal(err)
	}
	if b, _ := g.Report(ctx, 3); b != nil {
		t.Fatalf("report %q after clearing", b)
	}
}

// GroupCounters reads, in one script, what XINFO STREAM and XINFO GROUPS
// tell about each stream and one group: a missing stream, a stream without
// the group, a group whose entries-read Redis does not know, and one it
// does.
func TestGroupCounters(t *testing.T) {
	t.Parallel()
	c, prefix := redistest.Client(t)
	ctx := context.Background()
	missing, nogroup, unknown, known := prefix+":a", prefix+":b", prefix+":c", prefix+":d"
	for _, k := range []string{nogroup, unknown, known} {
		for range 3 {
			c.XAdd(ctx, &redis.XAddArgs{Stream: k, Values: []any{"f", "v"}})
		}
	}
	c.XGroupCreate(ctx, unknown, "g", "$")
	c.XDel(ctx, unknown, c.XRange(ctx, unknown, "-", "+").Val()[1].ID) // a hole: entries-read unknown after a read past it
	c.XGroupSetID(ctx, unknown, "g", "0")
	c.XReadGroup(ctx, &redis.XReadGroupArgs{Group: "g", Consumer: "x", Streams: []string{unknown, ">"}, Count: 1})
	c.XGroupCreate(ctx, known, "g", "0")
	c.XReadGroup(ctx, &redis.XReadGroupArgs{Group: "g", Consumer: "x", Streams: []string{known, ">"}, Count: 2})
	c.XTrimMaxLen(ctx, known, 1)

	got, err := rdb.GroupCounters(ctx, c, []string{missing, nogroup, unknown, known}, "g")
	if err != nil {
		t.Fatal(err)
	}
	want, err := rdb.PartitionStates(ctx, c, []string{missing, nogroup, unknown, known})
	if err != nil {
		t.Fatal(err)
	}
	for i, w := range want {
		g, ok := w.Group("g")
		if got[i].Exists != w.Exists || got[i].Length != w.Length || got[i].Added != w.Added || got[i].FirstID != w.FirstID ||
			got[i].Group != ok || got[i].LastDeliveredID != g.LastDeliveredID || got[i].EntriesReadOK != g.EntriesReadOK ||
			(g.EntriesReadOK && got[i].EntriesRead != g.EntriesRead) {
			t.Errorf("stream %d: %+v, XINFO says %+v", i, got[i], w)
		}
	}
	if k := got[3]; !k.EntriesReadOK || k.EntriesRead != 2 || k.Added-k.Length-k.EntriesRead != 0 || k.Length != 1 {
		t.Errorf("read and trimmed stream: %+v", k)
	}
	if got[2].EntriesReadOK {
		t.Errorf("entries-read known across a deleted entry: %+v", got[2])
	}
}

// A table's values read one at a time, several in one pipeline, and by
// pages, each telling a key without a value.
func TestTableReads(t *testing.T) {
	t.Parallel()
	c, prefix := redistest.Client(t)
	ctx := context.Background()
	hash := prefix + ":table:{0}"
	c.HSet(ctx, hash, "a", "1", "b", "2")
	if v, ok, err := rdb.TableGet(ctx, c, hash, "a"); string(v) != "1" || !ok || err != nil {
		t.Fatalf("TableGet a: %q, %v, %v", v, ok, err)
	}
	if v, ok, err := rdb.TableGet(ctx, c, hash, "z"); v != nil || ok || err != nil {
		t.Fatalf("TableGet z: %q, %v, %v", v, ok, err)
	}
	vs, ok, err := rdb.TableGets(ctx, c, []string{hash, hash, hash}, []string{"b", "z", "a"})
	if err != nil || string(vs[0]) != "2" || vs[1] != nil || string(vs[2]) != "1" || !ok[0] || ok[1] || !ok[2] {
		t.Fatalf("TableGets: %q, %v, %v", vs, ok, err)
	}
	seen := map[string]string{}
	var cursor uint64
	for {
		kv, next, err := rdb.TableScan(ctx, c, hash, cursor, 1)
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i+1 < len(kv); i += 2 {
			seen[kv[i]] = kv[i+1]
		}
		if cursor = next; cursor == 0 {
			break
		}
	}
	if len(seen) != 2 || seen["a"] != "1" || seen["b"] != "2" {
		t.Fatalf("TableScan: %v", seen)
	}
}

// The transaction read runs only while no watched lock changed.
func TestWatchedRead(t *testing.T) {
	t.Parallel()
	c, prefix := redistest.Client(t)
	ctx := context.Background()
	lock, key := prefix+":lock:{x}", prefix+":stream:{x}"
	c.Set(ctx, lock, "mine", time.Minute)
	c.XGroupCreateMkStream(ctx, key, "g", "0")
	c.XAdd(ctx, &redis.XAddArgs{Stream: key, ID: "1-1", Values: []any{"f", "v"}})
	conn := c.Conn()
	defer conn.Close()
	owners, err := rdb.WatchLocks(ctx, conn, []string{lock})
	if err != nil || len(owners) != 1 || owners[0] != "mine" {
		t.Fatalf("WatchLocks: %v, %v", owners, err)
	}
	c.Set(ctx, lock, "mine", time.Minute) // refreshed from another connection
	err = rdb.ExecWatched(ctx, conn, func(p redis.Pipeliner) { rdb.QueueReadNew(ctx, p, "g", "c", key, 10, false) })
	if !errors.Is(err, redis.TxFailedErr) {
		t.Fatalf("after the lock changed: %v, want redis.TxFailedErr", err)
	}
	owners, err = rdb.WatchLocks(ctx, conn, []string{lock})
	if err != nil || owners[0] != "mine" {
		t.Fatalf("WatchLocks: %v, %v", owners, err)
	}
	var tail *redis.XMessageSliceCmd
	if err := rdb.ExecWatched(ctx, conn, func(p redis.Pipeliner) {
		_, tail = rdb.QueueReadNew(ctx, p, "g", "c", key, 10, true)
	}); err != nil {
		t.Fatal(err)
	}
	if got := tail.Val(); len(got) != 1 || got[0].ID != "1-1" {
		t.Fatalf("tail %v", got)
	}
	if n := c.XPending(ctx, key, "g").Val().Count; n != 1 {
		t.Fatalf("%d pending, want the entry read", n)
	}
	if _, err := rdb.WatchLocks(ctx, conn, []string{lock}); err != nil {
		t.Fatal(err)
	}
	if err := rdb.Unwatch(ctx, conn); err != nil {
		t.Fatal(err)
	}
}
