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

// message is an entry as the fetch script returns it.
type message struct {
	ID     string
	Fields []string
}

type fetchResult struct {
	rdb.FetchResult
	Messages []message
}

func fetch(t *testing.T, c *redis.Client, lock, key, token string, count int, cursor string) fetchResult {
	t.Helper()
	ctx := context.Background()
	if err := rdb.Load(ctx, c); err != nil {
		t.Fatal(err)
	}
	pipe := c.Pipeline()
	cmd := rdb.FetchRaw(ctx, pipe, &rdb.FetchArgs{Lock: lock, Partition: key, Group: "g", Consumer: "c1"}, token, count, cursor)
	if _, err := pipe.Exec(ctx); err != nil {
		t.Fatal(err)
	}
	var msgs []message
	r, err := rdb.ParseRawFetch(cmd, func(id string, fields [][]byte) error {
		m := message{ID: id}
		for _, f := range fields {
			m.Fields = append(m.Fields, string(f))
		}
		msgs = append(msgs, m)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return fetchResult{r, msgs}
}

// A script unknown to the server (restarted, failed over) comes back from
// the raw read as NOSCRIPT, which callers answer by loading the rdb.
func TestFetchRawNoScript(t *testing.T) {
	s := redistest.Start(t)
	c := s.Client(t)
	ctx := context.Background()
	c.ScriptFlush(ctx)
	pipe := c.Pipeline()
	cmd := rdb.FetchRaw(ctx, pipe, &rdb.FetchArgs{Lock: "lock", Partition: "s", Group: "g", Consumer: "c1"}, "me", 10, "")
	_, _ = pipe.Exec(ctx)
	if _, err := rdb.ParseRawFetch(cmd, nil); !rdb.IsNoScript(err) {
		t.Fatalf("fetch without the script loaded: %v, want NOSCRIPT", err)
	}
}

func TestFetchIsFencedByTheLock(t *testing.T) {
	t.Parallel()
	c, prefix := redistest.Client(t)
	ctx := context.Background()
	key, lock := prefix+":s:{p}", prefix+":lock:{p}"
	for range 5 {
		c.XAdd(ctx, &redis.XAddArgs{Stream: key, Values: []any{"data", "x"}})
	}
	c.XGroupCreate(ctx, key, "g", "0")

	if r := fetch(t, c, lock, key, "me", 10, ""); r.Held || len(r.Messages) != 0 {
		t.Fatalf("read without the lock: %+v", r)
	}
	c.Set(ctx, lock, "someone-else", time.Minute)
	if r := fetch(t, c, lock, key, "me", 10, ""); r.Held {
		t.Fatalf("read with another's lock: %+v", r)
	}
	if n := c.XPending(ctx, key, "g").Val().Count; n != 0 {
		t.Fatalf("%d entries delivered without the lock", n)
	}
	c.Set(ctx, lock, "me", time.Minute)
	r := fetch(t, c, lock, key, "me", 3, "")
	if !r.Held || len(r.Messages) != 3 || len(r.Messages[0].Fields) != 2 || r.Messages[0].Fields[1] != "x" {
		t.Fatalf("read with the lock: %+v", r)
	}
	r = fetch(t, c, lock, key, "me", 10, "")
	if len(r.Messages) != 2 {
		t.Fatalf("second read: %d entries, want 2", len(r.Messages))
	}
	r = fetch(t, c, lock, key, "me", 10, "")
	if len(r.Messages) != 0 || r.Last == "" || r.Last == "0-0" {
		t.Fatalf("empty read: %+v, want the last ID", r)
	}
}

func TestFetchRecoversPendingInOrder(t *testing.T) {
	t.Parallel()
	c, prefix := redistest.Client(t)
	ctx := context.Background()
	key, lock := prefix+":s:{p}", prefix+":lock:{p}"
	var ids []string
	for range 6 {
		ids = append(ids, c.XAdd(ctx, &redis.XAddArgs{Stream: key, Values: []any{"data", "x"}}).Val())
	}
	c.XGroupCreate(ctx, key, "g", "0")
	// A previous owner read 5 entries and died; one of them was trimmed since.
	c.XReadGroup(ctx, &redis.XReadGroupArgs{Group: "g", Consumer: "dead", Streams: []string{key, ">"}, Count: 5})
	c.XDel(ctx, key, ids[1])
	c.Set(ctx, lock, "me", time.Minute)

	r := fetch(t, c, lock, key, "me", 2, "0-0")
	if !r.Held || len(r.Messages) != 1 || r.Messages[0].ID != ids[0] || len(r.Deleted) != 1 || r.Deleted[0] != ids[1] {
		t.Fatalf("first recovery page: %+v", r)
	}
	if r.Counts[0] != 2 {
		t.Fatalf("delivery count %d, want 2 (the dead owner's and this one)", r.Counts[0])
	}
	var got []string
	for cursor := r.Cursor; cursor != "0-0"; {
		r = fetch(t, c, lock, key, "me", 2, cursor)
		for _, m := range r.Messages {
			got = append(got, m.ID)
		}
		cursor = r.Cursor
	}
	if len(got) != 3 || got[0] != ids[2] || got[2] != ids[4] {
		t.Fatalf("recovered %v, want %v in order", got, ids[2:5])
	}
	// Then new entries.
	if r := fetch(t, c, lock, key, "me", 10, ""); len(r.Messages) != 1 || r.Messages[0].ID != ids[5] {
		t.Fatalf("new entries after recovery: %+v", r)
	}
}

func TestHeartbeatAndLiveMembers(t *testing.T) {
	t.Parallel()
	c, prefix := redistest.Client(t)
	ctx := context.Background()
	members := prefix + ":members:{g}"
	present, expired, err := rdb.Heartbeat(ctx, c, members, "a", 60_000)
	if err != nil || present || len(expired) != 0 {
		t.Fatalf("first heartbeat: %v %v %v", present, expired, err)
	}
	if present, _, _ := rdb.Heartbeat(ctx, c, members, "a", 60_000); !present {
		t.Fatal("second heartbeat: not present")
	}
	c.ZAdd(ctx, members, redis.Z{Member: "dead", Score: 1})
	_, expired, _ = rdb.Heartbeat(ctx, c, members, "a", 60_000)
	if len(expired) != 1 || expired[0] != "dead" {
		t.Fatalf("expired %v, want [dead]", expired)
	}
	live, removed, err := rdb.LiveMembers(ctx, c, members)
	if err != nil || len(live) != 1 || live[0] != "a" || len(removed) != 1 {
		t.Fatalf("live %v removed %v %v", live, removed, err)
	}
	if n := c.ZCard(ctx, members).Val(); n != 1 {
		t.Fatalf("%d members after removal", n)
	}
}

func TestRegisterStream(t *testing.T) {
	t.Parallel()
	c, prefix := redistest.Client(t)
	ctx := context.Background()
	reg := prefix + ":streams:{app}"
	def := `{"name":"s","partitions":8,"key_field":"k","codec":"msgpack"}`
	stored := `{"name":"s","partitions":8,"key_field":"k","codec":"msgpack","entry_codec":"msgpack"}`
	if ec, _, ok, err := rdb.RegisterStream(ctx, c, reg, "s", def, 8, "k", "msgpack"); !ok || err != nil || ec != "msgpack" {
		t.Fatalf("first registration: %q %v %v", ec, ok, err)
	}
	if got := c.HGet(ctx, reg, "s").Val(); got != stored {
		t.Fatalf("stored %q, want %q", got, stored)
	}
	if _, cur, ok, _ := rdb.RegisterStream(ctx, c, reg, "s", `{}`, 4, "k", "msgpack"); ok || cur != stored {
		t.Fatalf("other partition count accepted (%v, %q)", ok, cur)
	}
	if _, _, ok, _ := rdb.RegisterStream(ctx, c, reg, "s", `{}`, 8, "other", "msgpack"); ok {
		t.Fatal("other key field accepted")
	}
	// A codec change is recorded, but entries without a codec field keep
	// the codec of the first registration.
	changed := `{"name":"s","partitions":8,"key_field":"k","codec":"json"}`
	if ec, _, ok, err := rdb.RegisterStream(ctx, c, reg, "s", changed, 8, "k", "json"); !ok || err != nil || ec != "msgpack" {
		t.Fatalf("codec change: entry codec %q, %v %v; want msgpack", ec, ok, err)
	}
	if got, want := c.HGet(ctx, reg, "s").Val(), `{"name":"s","partitions":8,"key_field":"k","codec":"json","entry_codec":"msgpack"}`; got != want {
		t.Fatalf("after a codec change stored %q, want %q", got, want)
	}
	// A definition written before entry codecs existed gets the codec of
	// the next registration: its entries all carry their codec.
	c.HSet(ctx, reg, "old", `{"name":"old","partitions":8,"key_field":"k","codec":"json"}`)
	if ec, _, ok, _ := rdb.RegisterStream(ctx, c, reg, "old", `{"name":"old","partitions":8,"key_field":"k","codec":"msgpack"}`, 8, "k", "msgpack"); !ok || ec != "msgpack" {
		t.Fatalf("definition without an entry codec: got %q, %v", ec, ok)
	}
	fn := `{"name":"f","partitions":8}`
	rdb.RegisterStream(ctx, c, reg, "f", fn, 8, "", "msgpack")
	if ec, _, ok, _ := rdb.RegisterStream(ctx, c, reg, "f", `{"x":1}`, 8, "k", "json"); !ok || ec != "msgpack" {
		t.Fatalf("a field naming the key of a function-keyed stream: %q %v, want the registered entry codec", ec, ok)
	}
	if got, want := c.HGet(ctx, reg, "f").Val(), `{"name":"f","partitions":8,"entry_codec":"msgpack"}`; got != want {
		t.Fatalf("function-keyed definition replaced by %q", got)
	}
}

// The assignment is written only by the holder of the admin lock, and only
// over the version it was computed from: a rebalancer that stalled while
// holding the admin lock cannot overwrite a newer assignment.
func TestStoreAssignmentIsFenced(t *testing.T) {
	t.Parallel()
	c, prefix := redistest.Client(t)
	ctx := context.Background()
	admin, key := prefix+":admin:{g}", prefix+":assignment:{g}"
	v1 := []byte(`{"version":1,"members":{"a":[0,1]}}`)
	if err := rdb.StoreAssignment(ctx, c, admin, key, "mine", 0, v1); !errors.Is(err, rdb.ErrNotAdmin) {
		t.Fatalf("without the admin lock: %v", err)
	}
	c.Set(ctx, admin, "mine", time.Minute)
	if err := rdb.StoreAssignment(ctx, c, admin, key, "mine", 0, v1); err != nil {
		t.Fatal(err)
	}
	// A stalled rebalancer computed from version 0; version 1 is stored.
	if err := rdb.StoreAssignment(ctx, c, admin, key, "mine", 0, []byte(`{"version":1,"members":{}}`)); !errors.Is(err, rdb.ErrStaleAssignment) {
		t.Fatalf("over a newer version: %v", err)
	}
	// Its admin lock expired and another rebalancer holds it now.
	c.Set(ctx, admin, "theirs", time.Minute)
	if err := rdb.StoreAssignment(ctx, c, admin, key, "mine", 1, []byte(`{"version":2,"members":{}}`)); !errors.Is(err, rdb.ErrNotAdmin) {
		t.Fatalf("with a lost admin lock: %v", err)
	}
	if got := c.Get(ctx, key).Val(); got != string(v1) {
		t.Fatalf("assignment %s, want %s", got, v1)
	}
}
