package leattest

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/leatdev/leat/internal/rdb"
	"github.com/redis/go-redis/v9"
)

// localRedis is where TryRedis looks for a redis-server when LEAT_REDIS_URL
// is not set.
var localRedis = "127.0.0.1:6379"

// probeTimeout bounds TryRedis's look for a local redis-server.
const probeTimeout = 300 * time.Millisecond

// TryRedis returns a client of a Redis server to try leat on, for examples
// and first steps, and a function that closes the client (and the server it
// started, if any):
//
//  1. the server of LEAT_REDIS_URL when that is set (an error when it does
//     not answer);
//  2. else a redis-server on 127.0.0.1:6379 when one answers;
//  3. else an in-memory server in this process (the kit's, see the package
//     documentation), which keeps nothing once the program ends.
//
// It writes which one it picked, as one line, to w (nil: nowhere). Real
// programs connect to their Redis with app.Config's RedisURL or Client.
func TryRedis(ctx context.Context, w io.Writer) (redis.UniversalClient, func(), error) {
	if w == nil {
		w = io.Discard
	}
	if url := os.Getenv("LEAT_REDIS_URL"); url != "" {
		opt, err := redis.ParseURL(url)
		if err != nil {
			return nil, nil, fmt.Errorf("leattest: LEAT_REDIS_URL: %w", err)
		}
		c := redis.NewClient(opt)
		if err := rdb.Ping(ctx, c); err != nil {
			_ = c.Close()
			return nil, nil, fmt.Errorf("leattest: Redis at %s (LEAT_REDIS_URL): %w", opt.Addr, err)
		}
		fmt.Fprintf(w, "using Redis at %s (LEAT_REDIS_URL)\n", opt.Addr)
		return c, func() { _ = c.Close() }, nil
	}
	// A plain TCP dial first, so that no server there costs no client
	// retries (nor go-redis's log lines about them).
	d := net.Dialer{Timeout: probeTimeout}
	if conn, err := d.DialContext(ctx, "tcp", localRedis); err == nil {
		_ = conn.Close()
		c := redis.NewClient(&redis.Options{Addr: localRedis})
		pctx, cancel := context.WithTimeout(ctx, probeTimeout)
		err := rdb.Ping(pctx, c)
		cancel()
		if err == nil {
			fmt.Fprintf(w, "using Redis at %s\n", localRedis)
			return c, func() { _ = c.Close() }, nil
		}
		_ = c.Close()
	}
	if err := ctx.Err(); err != nil {
		return nil, nil, err
	}
	srv := miniredis.NewMiniRedis()
	if err := srv.Start(); err != nil {
		return nil, nil, fmt.Errorf("leattest: start the in-memory server: %w", err)
	}
	srv.ClockTTL(true) // keys expire as time passes, as in Redis: locks and leases need it
	c := redis.NewClient(&redis.Options{Addr: srv.Addr(), DisableIdentity: true})
	fmt.Fprintf(w, "no Redis at %s: using an in-memory server (for trying only; set LEAT_REDIS_URL or start redis-server to keep the data)\n", localRedis)
	return c, func() { _ = c.Close(); srv.Close() }, nil
}
