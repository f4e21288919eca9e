package main

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/leatdev/leat/internal/redistest"
	"github.com/redis/go-redis/v9"
)

func TestMain(m *testing.M) { redistest.Main(m) }

// checkOutput fails t unless out reports every order and the summary.
func checkOutput(t *testing.T, out string) {
	t.Helper()
	for i := 1; i <= 10; i++ {
		if want := fmt.Sprintf("order %2d: customer c-", i); !strings.Contains(out, want) {
			t.Errorf("output does not mention %q:\n%s", want, out)
		}
	}
	for _, want := range []string{"sent 10 orders", "processed 10 orders of 4 customers", "c-ada:  114.00", "c-dee:   90.00"} {
		if !strings.Contains(out, want) {
			t.Errorf("output does not mention %q:\n%s", want, out)
		}
	}
}

func TestQuickstart(t *testing.T) {
	t.Parallel()
	c, _ := redistest.Client(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var out bytes.Buffer
	if err := run(ctx, &out, c); err != nil {
		t.Fatalf("run: %v\n%s", err, out.String())
	}
	checkOutput(t, out.String())
	// The run deletes its keys.
	keys, err := c.Keys(ctx, "leat-quickstart:*").Result()
	if err != nil {
		t.Fatal(err)
	}
	if len(keys) > 0 {
		t.Errorf("keys left behind: %v", keys)
	}
}

// TestQuickstartEmbedded runs the quickstart on the embedded server it falls
// back to when no Redis is around.
func TestQuickstartEmbedded(t *testing.T) {
	t.Parallel()
	m := miniredis.RunT(t)
	m.ClockTTL(true)
	c := redis.NewClient(&redis.Options{Addr: m.Addr()})
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var out bytes.Buffer
	if err := run(ctx, &out, c); err != nil {
		t.Fatalf("run: %v\n%s", err, out.String())
	}
	checkOutput(t, out.String())
}
