package app_test

import (
	"context"
	"testing"
	"time"

	"github.com/leatdev/leat/app"
	"github.com/leatdev/leat/internal/tools/redistest"
	"github.com/leatdev/leat/stream"
)

// A Redis restart (without persistence: every key is lost) does not stop a
// worker: it joins again, takes its partitions back and processes what is
// sent afterwards.
func TestRedisRestart(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	c := srv.Client(t)
	a, err := app.New(app.Config{Name: "shop", Client: c, Logger: testLogger(), Processing: fastOptions(), LeaderLease: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	s, err := stream.Declare[event](a, "events", stream.KeyField("key"), stream.Partitions(4))
	if err != nil {
		t.Fatal(err)
	}
	r := newRecorder()
	if err := app.Process(a, s, "p", collect(r)); err != nil {
		t.Fatal(err)
	}
	w := startWorker(t, a)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	before := sendEvents(t, s, []string{"a", "b", "c", "d", "e"}, 4, 0)
	redistest.Eventually(t, 10*time.Second, "events before the restart", func() bool { return r.count() == len(before) })

	srv.Restart(t)
	// Sends fail until the server is back.
	var after []event
	redistest.Eventually(t, 20*time.Second, "a send after the restart", func() bool {
		evs := []event{{Key: "a", Seq: 100}, {Key: "b", Seq: 100}, {Key: "c", Seq: 100}, {Key: "d", Seq: 100}}
		if _, err := s.SendMany(ctx, evs); err != nil {
			return false
		}
		after = evs
		return true
	})
	redistest.Eventually(t, 20*time.Second, "events after the restart", func() bool { return r.count() == len(before)+len(after) })
	if err := w.stop(t); err != nil {
		t.Fatal(err)
	}
	r.exactlyOnce(t, append(before, after...))
}
