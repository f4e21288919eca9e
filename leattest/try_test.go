package leattest

import (
	"bytes"
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
)

// closedAddr returns an address nothing listens on.
func closedAddr(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

func TestTryRedis(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	other := miniredis.RunT(t)
	defer func(old string) { localRedis = old }(localRedis)

	for _, tc := range []struct {
		name, env, local string
		want             string // the line written, or the error
		fails            bool
	}{
		{name: "LEAT_REDIS_URL", env: "redis://" + other.Addr(), local: closedAddr(t), want: "using Redis at " + other.Addr() + " (LEAT_REDIS_URL)\n"},
		{name: "LEAT_REDIS_URL unreachable", env: "redis://" + closedAddr(t), local: other.Addr(), want: "(LEAT_REDIS_URL): ", fails: true},
		{name: "LEAT_REDIS_URL malformed", env: "http://" + other.Addr(), local: other.Addr(), want: "leattest: LEAT_REDIS_URL: ", fails: true},
		{name: "a local server", local: other.Addr(), want: "using Redis at " + other.Addr() + "\n"},
		{name: "in memory", local: closedAddr(t), want: "using an in-memory server (for trying only"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("LEAT_REDIS_URL", tc.env)
			localRedis = tc.local
			var out bytes.Buffer
			c, closeRedis, err := TryRedis(ctx, &out)
			if tc.fails {
				if err == nil || !strings.Contains(err.Error(), tc.want) || out.Len() > 0 {
					t.Fatalf("err %v, output %q: want an error with %q and no output", err, out.String(), tc.want)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(out.String(), tc.want) || strings.Count(out.String(), "\n") != 1 {
				t.Errorf("output %q, want one line with %q", out.String(), tc.want)
			}
			if err := c.Set(ctx, "tried", tc.name, 0).Err(); err != nil {
				t.Fatal(err)
			}
			if tc.local == other.Addr() || tc.env != "" {
				if got, _ := other.Get("tried"); got != tc.name {
					t.Errorf("the value went elsewhere: %q", got)
				}
			}
			closeRedis()
			if err := c.Ping(ctx).Err(); err == nil {
				t.Error("the client still answers once closed")
			}
		})
	}
}
