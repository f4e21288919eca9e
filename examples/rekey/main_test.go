package main

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/leatdev/leat/internal/tools/redistest"
	"github.com/redis/go-redis/v9"
	"github.com/vmihailenco/msgpack/v5"
)

func TestMain(m *testing.M) { redistest.Main(m) }

// The pipeline counts every order's units once, runs again on what it left
// (the counts grow by exactly one run's units), and sales holds each
// order once.
func TestRekey(t *testing.T) {
	c, _ := redistest.Client(t)
	clean(t, c)
	t.Setenv("LEAT_REDIS_URL", redistest.URL(t))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	units := map[string]int{}
	for _, o := range orders(30) {
		units[o.Product] += o.Units
	}
	for round := 1; round <= 2; round++ {
		var out bytes.Buffer
		if err := run(ctx, &out, 30); err != nil {
			t.Fatalf("run: %v\n%s", err, out.String())
		}
		for p, n := range units {
			if want := fmt.Sprintf("%-7s %3d units", p, round*n); !strings.Contains(out.String(), want) {
				t.Errorf("run %d: output does not show %q:\n%s", round, want, out.String())
			}
		}
	}
	// Each run forwarded each of its 30 orders once.
	seen := map[int]int{}
	for p := range 4 {
		k := fmt.Sprintf("leat:s:{rekey:sales:%d}", p)
		for _, m := range c.XRange(ctx, k, "-", "+").Val() {
			var s Sale
			data, _ := m.Values["data"].(string)
			if err := msgpack.Unmarshal([]byte(data), &s); err != nil {
				t.Fatal(err)
			}
			seen[s.Order]++
		}
	}
	for id := 1; id <= 30; id++ {
		if seen[id] != 2 {
			t.Errorf("order %d sold %d times over two runs, want 2", id, seen[id])
		}
	}
}

// clean removes what an earlier run of the example left on the server,
// now and when the test ends.
func clean(t *testing.T, c *redis.Client) {
	del := func() {
		ctx := context.Background()
		iter := c.Scan(ctx, 0, "leat:*{rekey*", 1000).Iterator()
		for iter.Next(ctx) {
			c.Del(ctx, iter.Val())
		}
	}
	del()
	t.Cleanup(del)
}
