package app_test

import (
	"context"
	"testing"
	"time"

	"github.com/leatdev/leat/app"
	"github.com/leatdev/leat/internal/redistest"
	"github.com/leatdev/leat/stream"
	"github.com/redis/go-redis/v9"
)

// The leader deletes the consumer of an executor that never left once the
// new owner claimed its pending entries; a graceful stop deletes the
// stopping executor's consumers.
func TestJanitorDeletesDeadConsumers(t *testing.T) {
	t.Parallel()
	env := newEnv(t)
	a, s := env.newApp(2, nil)
	app.SetJanitorEvery(a, 50*time.Millisecond)
	r := newRecorder()
	if err := app.Process(a, s, "p", func(ctx context.Context, events *stream.Events[event]) error {
		for e := range events.All() {
			r.add(e)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	sent := sendEvents(t, s, []string{"a", "b", "c", "d"}, 10, 0)
	ctx := context.Background()
	// An executor that crashed with entries of every partition pending.
	for n := range 2 {
		key := app.PartitionKey(s, n)
		env.client.XGroupCreate(ctx, key, "p", "0")
		env.client.XReadGroup(ctx, &redis.XReadGroupArgs{Group: "p", Consumer: "crashed", Streams: []string{key, ">"}, Count: 3})
	}
	consumers := func(n int) []redis.XInfoConsumer {
		return env.client.XInfoConsumers(ctx, app.PartitionKey(s, n), "p").Val()
	}
	w := startWorker(t, a)
	redistest.Eventually(t, 20*time.Second, "every event processed", func() bool { return r.count() == len(sent) })
	redistest.Eventually(t, 10*time.Second, "the crashed consumer deleted", func() bool {
		for n := range 2 {
			for _, c := range consumers(n) {
				if c.Name == "crashed" {
					return false
				}
			}
		}
		return true
	})
	r.exactlyOnce(t, sent)
	if err := w.stop(t); err != nil {
		t.Fatal(err)
	}
	for n := range 2 {
		if cs := consumers(n); len(cs) != 0 {
			t.Errorf("partition %d: consumers %+v left after a graceful stop", n, cs)
		}
	}
}
