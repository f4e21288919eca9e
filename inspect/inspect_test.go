package inspect_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/leatdev/leat/inspect"
	"github.com/leatdev/leat/internal/rdb"
	"github.com/leatdev/leat/internal/tools/redistest"
	"github.com/redis/go-redis/v9"
)

func TestMain(m *testing.M) { redistest.Main(m) }

// The figures of a stream written by hand, as the runtime would leave it.
func TestStreamFigures(t *testing.T) {
	t.Parallel()
	c, prefix := redistest.Client(t)
	ctx := context.Background()
	k := rdb.NewKeySpace(prefix, "shop")
	c.HSet(ctx, k.Registry(), "orders", `{"name":"orders","partitions":2,"size":10,"codec":"msgpack","key_field":"id"}`)
	c.HSet(ctx, k.Processors(), "orders/totals", `{"stream":"orders","processor":"totals","lock_expiry":2000000000}`)
	p0 := k.Partition("orders", 0)
	for i := range 9 {
		c.XAdd(ctx, &redis.XAddArgs{Stream: p0, Values: []any{"n", i}})
	}
	c.XGroupCreateMkStream(ctx, p0, "totals", "0")
	c.XReadGroup(ctx, &redis.XReadGroupArgs{Group: "totals", Consumer: "e1", Streams: []string{p0, ">"}, Count: 3})
	c.Set(ctx, k.Lock("orders", "totals", 0), "tok e1 w1", time.Minute)
	c.HSet(ctx, k.Quarantine("orders", "totals"), "0", `{"policy":"quarantine","executor":"e1","worker":"w1","id":"1-0","error":"boom","time":"2024-01-02T03:04:05Z"}`)
	now, _ := c.Time(ctx).Result()
	c.ZAdd(ctx, k.Members("orders", "totals"), redis.Z{Member: "e1", Score: float64(now.Add(1500 * time.Millisecond).UnixMilli())})
	c.Set(ctx, k.Leader(), "tok w1", time.Minute)
	c.Set(ctx, k.LeaderTerm(), 7, 0)

	in := inspect.New(c, prefix, "shop")
	r, err := in.Stream(ctx, "orders")
	if err != nil {
		t.Fatal(err)
	}
	if r.Length != 9 || r.Size != 10 || len(r.Partitions) != 2 || r.Partitions[0].Length != 9 || r.Partitions[1].Length != 0 {
		t.Fatalf("report %+v", r)
	}
	pp := r.Processors[0].Partitions[0]
	if pp.Owner == nil || *pp.Owner != (inspect.Owner{Executor: "e1", Worker: "w1"}) || *pp.Lag != 6 || pp.Pending != 3 ||
		pp.OldestPendingAgeMS == nil || pp.Consumers != 1 || pp.Quarantine == nil || pp.Quarantine.Error != "boom" || pp.RetentionRisk {
		t.Errorf("partition 0: %+v", pp)
	}
	if p1 := r.Processors[0].Partitions[1]; p1.Owner != nil || p1.Lag == nil || *p1.Lag != 0 {
		t.Errorf("partition 1 (no stream): %+v", p1)
	}
	// Three more entries read by nobody: lag 9 of 10 is at risk.
	for range 3 {
		c.XAdd(ctx, &redis.XAddArgs{Stream: p0, Values: []any{"n", 0}})
	}
	if r, _ = in.Stream(ctx, "orders"); !r.Processors[0].Partitions[0].RetentionRisk || len(r.Warnings) != 2 {
		t.Errorf("after 3 more: %+v, warnings %q", r.Processors[0].Partitions[0], r.Warnings)
	}

	o, err := in.Overview(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if o.Leader == nil || o.Leader.Worker != "w1" || o.Leader.Term != 7 || len(o.Workers) != 1 || !o.Workers[0].Leader {
		t.Fatalf("overview %+v", o)
	}
	e := o.Workers[0].Executors[0]
	if e.ID != "e1" || !e.Alive || fmt.Sprint(e.Partitions) != "[0]" || e.HeartbeatAgeMS < 400 || e.HeartbeatAgeMS > 5000 {
		t.Errorf("executor %+v", e)
	}

	if _, err := in.Stream(ctx, "nope"); !errors.Is(err, inspect.ErrUnknownStream) {
		t.Errorf("unknown stream: %v", err)
	}
}
