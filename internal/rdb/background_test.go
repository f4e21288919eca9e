package rdb_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/leatdev/leat/internal/rdb"
	"github.com/leatdev/leat/internal/tools/redistest"
)

// A background task's record is written only by the holder of the leader
// lease, never over a later term's record or a later tick, with its TTL.
func TestRecordBackgroundIsFencedByTheLease(t *testing.T) {
	t.Parallel()
	c, prefix := redistest.Client(t)
	ctx := context.Background()
	leader, rec := prefix+":leader:{a}", prefix+":bg:{a}:report"
	ttl := 3 * time.Second
	record := func(value string, term int64, field string, v int64) error {
		return rdb.RecordBackground(ctx, c, leader, rec, value, term, field, v, ttl)
	}
	if err := record("old w1", 10, rdb.RecordTick, 1000); !errors.Is(err, rdb.ErrNotLeader) {
		t.Fatalf("without the lease: %v", err)
	}
	c.Set(ctx, leader, "new w2", time.Minute)
	if err := record("old w1", 10, rdb.RecordTick, 1000); !errors.Is(err, rdb.ErrNotLeader) {
		t.Fatalf("with another's lease: %v", err)
	}
	if err := record("new w2", 11, rdb.RecordTick, 1000); err != nil {
		t.Fatal(err)
	}
	if err := record("new w2", 11, rdb.RecordTick, 1000); !errors.Is(err, rdb.ErrStaleRecord) {
		t.Fatalf("the same tick again: %v", err)
	}
	if err := record("new w2", 11, rdb.RecordTick, 900); !errors.Is(err, rdb.ErrStaleRecord) {
		t.Fatalf("an earlier tick: %v", err)
	}
	if err := record("new w2", 11, rdb.RecordTick, 1100); err != nil {
		t.Fatal(err)
	}
	// A lease value holding the lease with an older term than the record's
	// (a counter lost in a Redis restart cannot give one; refused anyway).
	c.HSet(ctx, rec, rdb.RecordTerm, 12)
	if err := record("new w2", 11, rdb.RecordTick, 1200); !errors.Is(err, rdb.ErrStaleRecord) {
		t.Fatalf("an older term: %v", err)
	}
	if err := record("new w2", 13, rdb.RecordDone, 13); err != nil {
		t.Fatal(err)
	}
	got := c.HGetAll(ctx, rec).Val()
	if got["term"] != "13" || got["tick"] != "1100" || got["done"] != "13" {
		t.Fatalf("record %v", got)
	}
	if d := c.PTTL(ctx, rec).Val(); d <= 0 || d > ttl {
		t.Fatalf("TTL %s, want at most %s", d, ttl)
	}
}
