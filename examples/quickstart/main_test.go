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
	"github.com/leatdev/leat/internal/redistest"
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
