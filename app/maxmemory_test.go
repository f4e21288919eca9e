package app_test

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/leatdev/leat/app"
	"github.com/leatdev/leat/internal/tools/redistest"
	"github.com/leatdev/leat/stream"
)

// Redis at maxmemory (noeviction) refuses writes, and in Redis 7 every
// command queued in a transaction: a send fails with Redis's OOM error, but
// a running worker goes on processing what was sent before, since reads
// and acknowledgements are not refused (a fetch transaction aborted by
// Redis, EXECABORT, is read again by the fetch script), and once memory is
// available again it processes what is sent next.
func TestMaxmemory(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	c := srv.Client(t)
	var logs redistest.Log
	a, err := app.New(app.Config{Name: "shop", Client: c, Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelWarn})),
		Processing: fastOptions(), LeaderLease: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	s, err := stream.Declare[event](a, "events", stream.KeyField("key"), stream.Partitions(4))
	if err != nil {
		t.Fatal(err)
	}
	r := newRecorder()
	gate := make(chan struct{})
	if err := app.Process(a, s, "p", func(ctx context.Context, events *stream.Events[event]) error {
		for e := range events.All() {
			if e.Record.Seq == 1 { // hold every partition's consumer at its second event
				select {
				case <-gate:
				case <-ctx.Done():
					return ctx.Err()
				}
			}
			r.add(e)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	w := startWorker(t, a)
	keys := []string{"a", "b", "c", "d", "e", "f", "g", "h"}
	sent := sendEvents(t, s, keys, 1000, 0) // far beyond what the partitions' buffers take
	redistest.Eventually(t, 10*time.Second, "the first event of every key", func() bool { return r.count() >= len(keys) })

	ctx := context.Background()
	if err := c.ConfigSet(ctx, "maxmemory-policy", "noeviction").Err(); err != nil {
		t.Fatal(err)
	}
	if err := c.ConfigSet(ctx, "maxmemory", "1").Err(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Send(ctx, event{Key: "a", Seq: 5000}); err == nil || !strings.Contains(err.Error(), "OOM") {
		t.Fatalf("a send at maxmemory: %v, want Redis's OOM error", err)
	}
	close(gate) // the consumers drain their buffers, and the fetcher reads the rest
	redistest.Eventually(t, 30*time.Second, "every event sent before processed at maxmemory", func() bool { return r.count() == len(sent) })
	if strings.Contains(logs.String(), "EXECABORT") {
		t.Fatalf("a failure that hides its cause: %s", logs.String())
	}
	select {
	case err := <-w.done:
		t.Fatalf("the worker stopped at maxmemory: %v", err)
	default:
	}

	if err := c.ConfigSet(ctx, "maxmemory", "0").Err(); err != nil {
		t.Fatal(err)
	}
	more := sendEvents(t, s, keys, 10, 2000)
	redistest.Eventually(t, 30*time.Second, "events sent once memory is available", func() bool { return r.count() == len(sent)+len(more) })
	if err := w.stop(t); err != nil {
		t.Fatal(err)
	}
	r.inOrder(t, true)
}
