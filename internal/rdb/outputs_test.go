package rdb_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/leatdev/leat/internal/rdb"
	"github.com/leatdev/leat/internal/tools/redistest"
	"github.com/redis/go-redis/v9"
)

// The output commit acknowledges, writes the tables and adds the outputs
// only while the lock holds; tried again under the same name (its reply
// was lost) it applies nothing twice; a guarded stream without room
// refuses it whole.
func TestCommitOutputs(t *testing.T) {
	t.Parallel()
	c, prefix := redistest.Client(t)
	ctx := context.Background()
	ks := rdb.NewKeySpace(prefix, "app")
	lock, src, mark := ks.Lock("in", "p", 0), ks.Partition("in", 0), ks.Committed("in", "p", 0)
	dst := ks.Partition("out", 1)
	table := ks.Table("in", "p", "t", 0)
	c.XGroupCreateMkStream(ctx, src, "p", "0")
	id := c.XAdd(ctx, &redis.XAddArgs{Stream: src, Values: []any{"key", "a", "data", "x"}}).Val()
	c.XReadGroup(ctx, &redis.XReadGroupArgs{Group: "p", Consumer: "c", Streams: []string{src, ">"}, Count: 10})
	out := []rdb.OutputEntry{{Key: dst, Size: 100, Fields: []any{"key", "a", "data", "1"}}, {Key: dst, Size: 100, Fields: []any{"key", "a", "data", "2"}}}
	changes := ks.TableChanges("in", "p", "t", 0)
	writes := []rdb.TableWrite{{Table: table, Field: "a", Value: []byte("v")}, {Table: changes, Value: []byte("c"), Log: 100}}

	held, err := rdb.CommitOutputs(ctx, c, lock, "mine", src, mark, "p", "c1", []string{id}, writes, out)
	if err != nil || held {
		t.Fatalf("without the lock: held %v, err %v", held, err)
	}
	if n := c.XLen(ctx, dst).Val(); n != 0 {
		t.Fatalf("%d outputs added without the lock", n)
	}
	c.Set(ctx, lock, "mine", time.Minute)
	for range 2 { // the second try: same name
		held, err = rdb.CommitOutputs(ctx, c, lock, "mine", src, mark, "p", "c1", []string{id}, writes, out)
		if err != nil || !held {
			t.Fatalf("with the lock: held %v, err %v", held, err)
		}
	}
	if n := c.XLen(ctx, dst).Val(); n != 2 {
		t.Fatalf("%d outputs, want 2 (a commit tried again is applied once)", n)
	}
	if p := c.XPending(ctx, src, "p").Val(); p.Count != 0 {
		t.Fatalf("%d pending after the commit", p.Count)
	}
	if v := c.HGet(ctx, table, "a").Val(); v != "v" {
		t.Fatalf("table value %q", v)
	}
	if n := c.XLen(ctx, changes).Val(); n != 1 {
		t.Fatalf("%d change log entries, want 1", n)
	}
	// A guarded stream whose group has 1 unprocessed entry and size 2 has
	// no room for 2 more: nothing is applied.
	guarded := ks.Partition("full", 0)
	c.XGroupCreateMkStream(ctx, guarded, "g", "0")
	c.XAdd(ctx, &redis.XAddArgs{Stream: guarded, Values: []any{"key", "z", "data", "z"}})
	full := []rdb.OutputEntry{{Key: guarded, Size: 2, Guard: true, Fields: []any{"key", "a", "data", "1"}}, {Key: guarded, Size: 2, Guard: true, Fields: []any{"key", "a", "data", "2"}}}
	_, err = rdb.CommitOutputs(ctx, c, lock, "mine", src, mark, "p", "c2", nil, []rdb.TableWrite{{Table: table, Field: "b", Value: []byte("w")}}, full)
	if !errors.Is(err, rdb.ErrOutputFull) {
		t.Fatalf("guarded stream without room: %v", err)
	}
	if c.XLen(ctx, guarded).Val() != 1 || c.HExists(ctx, table, "b").Val() {
		t.Fatal("a refused commit applied something")
	}
}

// Relaying an outbox adds each entry to its partition once and in order,
// even when the relay is repeated before the outbox is trimmed (a crash
// between the two), and trims what it relayed.
func TestRelayOutbox(t *testing.T) {
	t.Parallel()
	c, prefix := redistest.Client(t)
	ctx := context.Background()
	ks := rdb.NewKeySpace(prefix, "app")
	box := ks.Outbox("in", "p", 0)
	source := rdb.OutboxSource("in", "p", 0)
	add := func(from, to int) {
		for i := from; i < to; i++ {
			e := rdb.OutboxEntry(box, "out", i%2, rdb.OutputEntry{Size: 100, Fields: []any{"key", "k", "data", fmt.Sprint(i), "h:n", "v"}})
			args := append([]any{"XADD", box, "*"}, e.Fields...)
			if err := c.Do(ctx, args...).Err(); err != nil {
				t.Fatal(err)
			}
		}
	}
	add(0, 6)
	// A relay that ran but whose trim did not: the same entries, with
	// their IDs, relayed again (from a copy: a stream takes no ID below
	// its last one).
	saved := c.XRange(ctx, box, "-", "+").Val()
	if n, err := rdb.RelayOutbox(ctx, c, ks, box, source, 4); err != nil || n != 6 {
		t.Fatalf("relay: %d, %v", n, err)
	}
	if n := c.XLen(ctx, box).Val(); n != 0 {
		t.Fatalf("outbox keeps %d entries after the relay", n)
	}
	again := box + ":again"
	for _, m := range saved {
		c.XAdd(ctx, &redis.XAddArgs{Stream: again, ID: m.ID, Values: m.Values})
	}
	if n, err := rdb.RelayOutbox(ctx, c, ks, again, source, 100); err != nil || n != 6 {
		t.Fatalf("relay repeated: %d, %v", n, err)
	}
	add(6, 8)
	if n, err := rdb.RelayOutbox(ctx, c, ks, box, source, 100); err != nil || n != 2 {
		t.Fatalf("second relay: %d, %v", n, err)
	}
	for p := range 2 {
		msgs := c.XRange(ctx, ks.Partition("out", p), "-", "+").Val()
		var got []string
		for _, m := range msgs {
			got = append(got, m.Values["data"].(string))
			if m.Values["key"] != "k" || m.Values["h:n"] != "v" {
				t.Errorf("entry fields %v", m.Values)
			}
		}
		want := []string{}
		for i := p; i < 8; i += 2 {
			want = append(want, fmt.Sprint(i))
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("partition %d: %v, want %v", p, got, want)
		}
	}
}
