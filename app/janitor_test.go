package app_test

import (
	"context"
	"testing"
	"time"

	"github.com/leatdev/leat/app"
	"github.com/leatdev/leat/internal/tools/redistest"
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

// The leader deletes the dead consumers of processors its own program does
// not register, read from the registry: those another program of the app
// runs.
func TestJanitorCleansOtherProgramsProcessors(t *testing.T) {
	t.Parallel()
	env := newEnv(t)
	ctx := context.Background()
	leader, _ := env.newApp(2, func(c *app.Config) { c.WorkerID = "leader" })
	app.SetJanitorEvery(leader, 50*time.Millisecond)
	startWorker(t, leader)
	redistest.Eventually(t, 10*time.Second, "the first program leads", leader.IsLeader)

	// Another program of the app, with a processor of its own, runs once
	// (recording its stream and processor in the registry) and stops.
	other, _ := env.newApp(2, func(c *app.Config) { c.WorkerID = "other" })
	s, err := stream.Declare[event](other, "orders", stream.KeyField("key"), stream.Partitions(3))
	if err != nil {
		t.Fatal(err)
	}
	if err := app.Process(other, s, "billing", func(ctx context.Context, events *stream.Events[event]) error {
		for range events.All() {
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	w := startWorker(t, other)
	redistest.Eventually(t, 10*time.Second, "the other program's processor recorded", func() bool {
		return env.client.HExists(ctx, app.Keys(other).Processors(), "orders/billing").Val()
	})
	if err := w.stop(t); err != nil {
		t.Fatal(err)
	}
	// A consumer of a crashed executor of that processor, nothing pending.
	for n := range 3 {
		key := app.PartitionKey(s, n)
		env.client.XGroupCreateMkStream(ctx, key, "billing", "$")
		env.client.XGroupCreateConsumer(ctx, key, "billing", "crashed")
	}
	redistest.Eventually(t, 10*time.Second, "the crashed consumer deleted by the leader", func() bool {
		for n := range 3 {
			for _, c := range env.client.XInfoConsumers(ctx, app.PartitionKey(s, n), "billing").Val() {
				if c.Name == "crashed" {
					return false
				}
			}
		}
		return true
	})
}
