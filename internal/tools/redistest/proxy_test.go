package redistest_test

import (
	"context"
	"errors"
	"net"
	"testing"
	"time"

	"github.com/leatdev/leat/internal/tools/redistest"
	"github.com/redis/go-redis/v9"
)

func TestProxyFreezesTrafficWithSocketsOpen(t *testing.T) {
	t.Parallel()
	px := redistest.NewProxy(t, redistest.URL(t))
	opt, err := redis.ParseURL(px.URL())
	if err != nil {
		t.Fatal(err)
	}
	opt.ReadTimeout, opt.PoolSize = 300*time.Millisecond, 1
	c := redis.NewClient(opt)
	defer c.Close()
	ctx := context.Background()
	if err := c.Ping(ctx).Err(); err != nil {
		t.Fatal(err)
	}

	px.Freeze()
	start := time.Now()
	err = c.Ping(ctx).Err()
	var ne net.Error
	if !errors.As(err, &ne) || !ne.Timeout() {
		t.Fatalf("ping through a frozen proxy: %v, want a timeout (not a closed connection)", err)
	}
	if d := time.Since(start); d < 300*time.Millisecond {
		t.Fatalf("failed after %s, before the read timeout", d)
	}

	px.Thaw()
	redistest.Eventually(t, 5*time.Second, "traffic after thaw", func() bool { return c.Ping(ctx).Err() == nil })
}
