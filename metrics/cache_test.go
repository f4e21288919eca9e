package metrics_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/leatdev/leat/inspect"
	"github.com/leatdev/leat/internal/rdb"
	"github.com/leatdev/leat/internal/tools/redistest"
	"github.com/leatdev/leat/metrics"
	"github.com/redis/go-redis/v9"
)

// Scrapes within CacheFor reuse the figures read from Redis: frequent
// scrapes do not multiply the reads.
func TestGatherCache(t *testing.T) {
	t.Parallel()
	c, prefix := redistest.Client(t)
	ctx := context.Background()
	k := rdb.NewKeySpace(prefix, "shop")
	c.HSet(ctx, k.Registry(), "orders", `{"name":"orders","partitions":1,"size":100,"codec":"msgpack"}`)
	c.HSet(ctx, k.Processors(), "orders/totals", `{"stream":"orders","processor":"totals"}`)
	p0 := k.Partition("orders", 0)
	c.XGroupCreateMkStream(ctx, p0, "totals", "0")
	add := func(n int) {
		for range n {
			c.XAdd(ctx, &redis.XAddArgs{Stream: p0, Values: []any{"n", 1}})
		}
	}
	add(3)
	x, err := metrics.New(metrics.Config{CacheFor: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	x.Gather(inspect.New(c, prefix, "shop"), func() []string { return []string{"orders"} })
	h := metrics.NewHandler(x, nil)
	lag := func() float64 {
		code, body := get(t, h, "/metrics")
		if code != http.StatusOK {
			t.Fatalf("/metrics: %d", code)
		}
		v, _ := sample(body, "leat_lag", `processor="totals"`)
		return v
	}
	if v := lag(); v != 3 {
		t.Fatalf("lag %v, want 3", v)
	}
	add(2)
	if v := lag(); v != 3 {
		t.Errorf("lag %v within the cache period, want the cached 3", v)
	}
	// Gather again resets the cache.
	x.Gather(inspect.New(c, prefix, "shop"), func() []string { return []string{"orders"} })
	if v := lag(); v != 5 {
		t.Errorf("lag %v after a new Gather, want 5", v)
	}
	if code, body := get(t, h, "/readyz"); code != http.StatusOK || body != "ready\n" {
		t.Errorf("/readyz without a check: %d %q", code, body)
	}
}
