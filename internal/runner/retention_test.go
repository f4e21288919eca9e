package runner

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/leatdev/leat/executor"
	"github.com/leatdev/leat/internal/core"
	"github.com/leatdev/leat/internal/tools/redistest"
)

// A lag reaching 80% of the partition size is logged once, before
// retention can trim unread entries.
func TestRetentionWarning(t *testing.T) {
	t.Parallel()
	r := newRig(t, 1, 100)
	got := make(chan core.Delivery, 1)
	var logs redistest.Log
	e, err := New(Config{Stream: r.st, Processor: "p", Handler: stallingHandler(got),
		Options: executor.Options{LockExpiry: 900 * time.Millisecond, ReadBlock: 100 * time.Millisecond, Grace: 500 * time.Millisecond, Prefetch: 2},
		Logger:  slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	r.run(e)
	owns(t, e, 0)
	r.send(0, 1)
	select {
	case <-got:
	case <-time.After(10 * time.Second):
		t.Fatal("no event handed out")
	}
	ctx := context.Background()
	r.send(0, 50) // the processor stalls: lag about 50 of 100
	e.checkTrimmed(ctx)
	const msg = "lag near the partition size"
	if strings.Contains(logs.String(), msg) {
		t.Fatalf("warned at half the size: %s", logs.String())
	}
	r.send(0, 40)
	e.checkTrimmed(ctx)
	e.checkTrimmed(ctx)
	if n := strings.Count(logs.String(), msg); n != 1 {
		t.Fatalf("%d warnings, want 1: %s", n, logs.String())
	}
	if !strings.Contains(logs.String(), "partition=0") || !strings.Contains(logs.String(), "size=100") {
		t.Errorf("warning without its attributes: %s", logs.String())
	}
}
