package app_test

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/leatdev/leat/app"
	"github.com/leatdev/leat/executor"
	"github.com/leatdev/leat/internal/tools/redistest"
	"github.com/leatdev/leat/stream"
)

// A user of the common ACL "+@all -@dangerous" may not run CLIENT UNBLOCK:
// the worker says so once and still works through a backlog on one
// partition while the other is idle without waiting out its blocking reads
// (2s each: 3,000 events in batches of 100 would take a minute).
func TestACLWithoutClientUnblock(t *testing.T) {
	t.Parallel()
	prefix := redistest.Prefix(t)
	url := redistest.User(t, "+@all", "-@dangerous", "~"+prefix+":*", "&*")
	var logs redistest.Log
	a, err := app.New(app.Config{Name: "shop", RedisURL: url, KeyPrefix: prefix,
		Logger:      slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelWarn})),
		Processing:  executor.Options{ReadBlock: 2 * time.Second, Start: executor.Earliest},
		LeaderLease: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	s, err := stream.Declare[event](a, "events", stream.KeyField("key"), stream.Partitions(2))
	if err != nil {
		t.Fatal(err)
	}
	rec := newRecorder()
	if err := app.Process(a, s, "rec", func(ctx context.Context, events *stream.Events[event]) error {
		for e := range events.All() {
			rec.add(e)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	// One key: a backlog on one partition, the other one idle.
	sent := sendEvents(t, s, []string{"a"}, 3000, 0)
	start := time.Now()
	w := startWorker(t, a)
	redistest.Eventually(t, 15*time.Second, "the backlog processed", func() bool { return rec.count() == len(sent) })
	t.Logf("%d events in %s", len(sent), time.Since(start))
	if err := w.stop(t); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(logs.String(), "may not run a command that interrupts blocking reads"); n != 1 ||
		!strings.Contains(logs.String(), "command=\"CLIENT UNBLOCK\"") || !strings.Contains(logs.String(), "grant=+client|unblock") {
		t.Errorf("%d warnings about CLIENT UNBLOCK, want 1: %s", n, logs.String())
	}
}

// A user that may not run TIME, which leat's scripts call, stops the worker
// with an error naming the script, its commands and what to grant.
func TestACLScriptDenied(t *testing.T) {
	t.Parallel()
	prefix := redistest.Prefix(t)
	url := redistest.User(t, "+@all", "-@dangerous", "-time", "~"+prefix+":*", "&*")
	a, err := app.New(app.Config{Name: "shop", RedisURL: url, KeyPrefix: prefix, Logger: testLogger(),
		Processing: fastOptions(), LeaderLease: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	s, err := stream.Declare[event](a, "events", stream.KeyField("key"), stream.Partitions(2))
	if err != nil {
		t.Fatal(err)
	}
	if err := app.Process(a, s, "rec", func(ctx context.Context, events *stream.Events[event]) error {
		for range events.All() {
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err = a.Run(ctx)
	if err == nil {
		t.Fatal("Run returned nil")
	}
	for _, want := range []string{".lua calls ", "TIME", "+time", "@fast"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
}

// A user whose key pattern leaves out the app's prefix is told which
// pattern to grant.
func TestACLKeysOutsidePattern(t *testing.T) {
	t.Parallel()
	prefix := redistest.Prefix(t)
	url := redistest.User(t, "+@all", "-@dangerous", "~other:*", "&*")
	a, err := app.New(app.Config{Name: "shop", RedisURL: url, KeyPrefix: prefix, Logger: testLogger()})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	s, err := stream.Declare[event](a, "events", stream.KeyField("key"))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err = s.Send(ctx, event{Key: "a"})
	if want := "the Redis user may not access keys " + prefix + ":...: grant it ~" + prefix + ":*"; err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("send: %v, want %q", err, want)
	}
}

// A user whose channel pattern leaves out the app's prefix (task
// cancellations are published there) is told which pattern to grant.
func TestACLChannelsOutsidePattern(t *testing.T) {
	t.Parallel()
	prefix := redistest.Prefix(t)
	url := redistest.User(t, "+@all", "-@dangerous", "~"+prefix+":*")
	a, err := app.New(app.Config{Name: "shop", RedisURL: url, KeyPrefix: prefix, Logger: testLogger()})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err = a.Client().Publish(ctx, prefix+":tcancel:{shop:q}", "t1").Err()
	if want := "the Redis user may not use the channels " + prefix + ":...: grant it &" + prefix + ":*"; err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("publish: %v, want %q", err, want)
	}
}
