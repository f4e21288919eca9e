package main

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/leatdev/leat/cmd"
	"github.com/leatdev/leat/internal/tools/redistest"
	"github.com/redis/go-redis/v9"
)

func TestMain(m *testing.M) { redistest.Main(m) }

// checkOutput fails t unless out reports every order and the summary.
func checkOutput(t *testing.T, out string) {
	t.Helper()
	for i := 1; i <= 10; i++ {
		if want := fmt.Sprintf("order %2d: customer ", i); !strings.Contains(out, want) {
			t.Errorf("output does not mention %q:\n%s", want, out)
		}
	}
	for _, want := range []string{"order  1: customer ada, amount  10.00, partition ", "order 10: customer bob, amount  73.00", "processed 10 orders;"} {
		if !strings.Contains(out, want) {
			t.Errorf("output does not mention %q:\n%s", want, out)
		}
	}
}

// The quickstart runs on the Redis of LEAT_REDIS_URL, runs again on what it
// left there, and leat inspect shows its stream and processor afterwards.
func TestQuickstart(t *testing.T) {
	c, _ := redistest.Client(t)
	clean(t, c)
	t.Setenv("LEAT_REDIS_URL", redistest.URL(t))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for range 2 {
		var out bytes.Buffer
		if err := run(ctx, &out); err != nil {
			t.Fatalf("run: %v\n%s", err, out.String())
		}
		checkOutput(t, out.String())
	}
	var out, errs bytes.Buffer
	if st := cmd.Run(ctx, nil, []string{"leat", "--app", "quickstart", "inspect", "orders"}, strings.NewReader(""), &out, &errs); st != 0 {
		t.Fatalf("leat inspect orders: status %d, stderr %q", st, errs.String())
	}
	for _, want := range []string{"20 entries", "processor printer:", "lag 0, pending 0"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("leat inspect orders does not show %q:\n%s", want, out.String())
		}
	}
}

// TestQuickstartInMemory runs the quickstart on miniredis, the in-memory
// server it falls back to when no Redis is around.
func TestQuickstartInMemory(t *testing.T) {
	m := miniredis.RunT(t)
	m.ClockTTL(true)
	t.Setenv("LEAT_REDIS_URL", "redis://"+m.Addr())
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var out bytes.Buffer
	if err := run(ctx, &out); err != nil {
		t.Fatalf("run: %v\n%s", err, out.String())
	}
	checkOutput(t, out.String())
}

// clean deletes app quickstart's keys under the default prefix now and when the
// test ends: the example leaves them on purpose, and the server may be
// one of the user's (LEAT_TEST_REDIS_URL).
func clean(t *testing.T, c *redis.Client) {
	del := func() {
		ctx := context.Background()
		iter := c.Scan(ctx, 0, "leat:*{quickstart*", 1000).Iterator()
		for iter.Next(ctx) {
			c.Del(ctx, iter.Val())
		}
	}
	del()
	t.Cleanup(del)
}
