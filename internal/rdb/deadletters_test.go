package rdb_test

import (
	"context"
	"testing"

	"github.com/leatdev/leat/internal/rdb"
	"github.com/leatdev/leat/internal/tools/redistest"
	"github.com/redis/go-redis/v9"
)

// A replay adds the dead letter's fields to the partition and deletes the
// dead letter; a replay run again after its first step (the marker set,
// the dead letter still there) adds nothing.
func TestReplayDeadOnce(t *testing.T) {
	t.Parallel()
	c, prefix := redistest.Client(t)
	ctx := context.Background()
	k := rdb.NewKeySpace(prefix, "shop")
	dead, part := k.DeadLetter("orders", "totals"), k.Partition("orders", 1)
	fields := []any{"key", "k1", "codec", "json", "data", `{"n":1}`}
	id1 := c.XAdd(ctx, &redis.XAddArgs{Stream: dead, Values: append([]any{"dead:partition", "1"}, fields...)}).Val()
	id2 := c.XAdd(ctx, &redis.XAddArgs{Stream: dead, Values: append([]any{"dead:partition", "1"}, fields...)}).Val()

	mark1 := k.ReplayMark("orders", "totals", 1, id1)
	added, err := rdb.ReplayDead(ctx, c, part, mark1, 100, fields, dead, id1)
	if err != nil {
		t.Fatal(err)
	}
	msgs := c.XRange(ctx, part, "-", "+").Val()
	if len(msgs) != 1 || msgs[0].ID != added || msgs[0].Values["data"] != `{"n":1}` || msgs[0].Values["key"] != "k1" {
		t.Fatalf("partition %+v, added %s", msgs, added)
	}
	if ttl := c.PTTL(ctx, mark1).Val(); ttl <= 0 || ttl > rdb.ReplayMarkTTL {
		t.Errorf("marker TTL %s", ttl)
	}
	// Again, as a concurrent replay that read the dead letter before its
	// deletion would: nothing is added.
	if again, err := rdb.ReplayDead(ctx, c, part, mark1, 100, fields, dead, id1); err != nil || again != added {
		t.Errorf("second replay: %s, %v; want %s", again, err, added)
	}

	// A run stopped after its first step left the marker and the dead
	// letter: the next run adds nothing and completes the move.
	mark2 := k.ReplayMark("orders", "totals", 1, id2)
	c.Set(ctx, mark2, "9-9", 0)
	if got, err := rdb.ReplayDead(ctx, c, part, mark2, 100, fields, dead, id2); err != nil || got != "9-9" {
		t.Errorf("resumed replay: %s, %v", got, err)
	}
	if n := c.XLen(ctx, part).Val(); n != 1 {
		t.Errorf("partition holds %d entries, want 1", n)
	}
	if n := c.XLen(ctx, dead).Val(); n != 0 {
		t.Errorf("%d dead letters left", n)
	}
}

// DeleteDeadThrough deletes up to the ID given and keeps later letters.
func TestDeleteDeadThrough(t *testing.T) {
	t.Parallel()
	c, prefix := redistest.Client(t)
	ctx := context.Background()
	key := rdb.NewKeySpace(prefix, "shop").DeadLetter("orders", "totals")
	for _, id := range []string{"5-0", "5-1", "6-0"} {
		c.XAdd(ctx, &redis.XAddArgs{Stream: key, ID: id, Values: []any{"f", "v"}})
	}
	if n, err := rdb.DeleteDeadThrough(ctx, c, key, "5-1"); err != nil || n != 2 {
		t.Fatalf("deleted %d, %v", n, err)
	}
	if last, _ := rdb.DeadLast(ctx, c, key); last != "6-0" {
		t.Errorf("last %q", last)
	}
	if n, _ := rdb.DeadLengths(ctx, c, []string{key, key + "x"}); n[0] != 1 || n[1] != 0 {
		t.Errorf("lengths %v", n)
	}
}

// On Redis Cluster, where the dead letters and the partition are in
// different slots, a replay moves the entry and the reads work.
func TestReplayDeadCluster(t *testing.T) {
	t.Parallel()
	cl := redistest.StartCluster(t, 3)
	c := cl.Client(t)
	ctx := context.Background()
	k := rdb.NewKeySpace("leat", "shop")
	dead, part := k.DeadLetter("orders", "totals"), k.Partition("orders", 0)
	fields := []any{"key", "k1", "codec", "json", "data", `{"n":1}`}
	id := c.XAdd(ctx, &redis.XAddArgs{Stream: dead, Values: append([]any{"dead:partition", "0"}, fields...)}).Val()
	c.XAdd(ctx, &redis.XAddArgs{Stream: dead, Values: append([]any{"dead:partition", "0"}, fields...)})
	if n, err := rdb.DeadLengths(ctx, c, []string{dead, part}); err != nil || n[0] != 2 || n[1] != 0 {
		t.Fatalf("lengths %v, %v", n, err)
	}
	if _, err := rdb.ReplayDead(ctx, c, part, k.ReplayMark("orders", "totals", 0, id), 100, fields, dead, id); err != nil {
		t.Fatal(err)
	}
	if n, _ := rdb.DeadLengths(ctx, c, []string{dead, part}); n[0] != 1 || n[1] != 1 {
		t.Errorf("after the replay: lengths %v, want 1 dead letter and 1 entry", n)
	}
	last, err := rdb.DeadLast(ctx, c, dead)
	if err != nil {
		t.Fatal(err)
	}
	if n, err := rdb.DeleteDeadThrough(ctx, c, dead, last); err != nil || n != 1 {
		t.Errorf("purge: %d, %v", n, err)
	}
}
