package rdb_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/leatdev/leat/internal/keys"
	"github.com/leatdev/leat/internal/rdb"
	"github.com/leatdev/leat/internal/redistest"
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
	g := rdb.NewGroup(c, keys.New(prefix, "shop"), "orders", "totals")
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
