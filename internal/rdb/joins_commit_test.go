package rdb_test

import (
	"context"
	"testing"
	"time"

	"github.com/leatdev/leat/internal/rdb"
	"github.com/leatdev/leat/internal/tools/redistest"
)

// A commit with a change log entry appends it, linked to the entry before
// it, with the table's writes; a stale owner's commit appends nothing; a
// log key of another type fails the commit before anything is written.
func TestCommitAppendsChangeLog(t *testing.T) {
	t.Parallel()
	c, prefix := redistest.Client(t)
	ctx := context.Background()
	k := rdb.NewKeySpace(prefix, "shop")
	lock, part := k.Lock("customers", "profiles", 0), k.Partition("customers", 0)
	hash, log := k.Table("customers", "profiles", "t", 0), k.TableChanges("customers", "profiles", "t", 0)
	if err := c.XGroupCreateMkStream(ctx, part, "profiles", "0").Err(); err != nil {
		t.Fatal(err)
	}
	c.Set(ctx, lock, "mine", time.Minute)
	commit := func(value string, key string, v string) (bool, error) {
		writes := []rdb.TableWrite{{Table: hash, Field: key, Value: []byte(v)},
			{Table: log, Value: rdb.EncodeChanges([]rdb.Change{{Key: key, Value: []byte(v)}}), Log: 100}}
		return rdb.CommitTables(ctx, c, lock, value, part, "profiles", nil, writes)
	}
	for _, v := range []string{"one", "two"} {
		if ok, err := commit("mine", "k", v); !ok || err != nil {
			t.Fatalf("commit %s: %v %v", v, ok, err)
		}
	}
	if ok, err := commit("stale", "k", "three"); ok || err != nil {
		t.Fatalf("a stale owner's commit: %v %v", ok, err)
	}
	entries, err := rdb.ReadChanges(ctx, c, []string{log}, []string{rdb.NoChanges}, 10, -1)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 2 || entries[0].Prev != rdb.NoChanges || entries[1].Prev != entries[0].ID {
		t.Fatalf("log %+v: want two entries, the second naming the first", entries)
	}
	changes, err := rdb.DecodeChanges(entries[1].Changes)
	if err != nil || len(changes) != 1 || string(changes[0].Value) != "two" {
		t.Fatalf("second entry's changes %+v %v", changes, err)
	}
	if ends, err := rdb.ChangeLogEnds(ctx, c, []string{log, log + "-none"}); err != nil || ends[0] != entries[1].ID || ends[1] != rdb.NoChanges {
		t.Fatalf("ends %v %v", ends, err)
	}

	bad := k.TableChanges("customers", "profiles", "bad", 0)
	c.Set(ctx, bad, "x", 0)
	writes := []rdb.TableWrite{{Table: hash, Field: "k", Value: []byte("four")}, {Table: bad, Value: []byte("s"), Log: 100}}
	if _, err := rdb.CommitTables(ctx, c, lock, "mine", part, "profiles", nil, writes); err == nil {
		t.Fatal("a log key holding a string was written to")
	}
	if v := c.HGet(ctx, hash, "k").Val(); v != "two" {
		t.Errorf("the table holds %q after a failed commit, want two", v)
	}
}
