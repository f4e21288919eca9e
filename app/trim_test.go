package app_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/leatdev/leat/app"
	"github.com/leatdev/leat/executor"
	"github.com/leatdev/leat/internal/tools/redistest"
	"github.com/leatdev/leat/stream"
)

// Entries trimmed by retention before the processor read them are reported
// to the failure policy, not lost silently.
func TestTrimmedBeforeRead(t *testing.T) {
	t.Parallel()
	env := newEnv(t)
	trimmed := make(chan int64, 1)
	cfg := func(c *app.Config) {
		c.Processing.LockExpiry = 900 * time.Millisecond
		c.Hooks = []executor.Hook{trimObserver{ch: trimmed}}
	}
	a, _ := env.newApp(1, cfg)
	s, err := stream.Declare[event](a, "small", stream.KeyField("key"), stream.Partitions(1), stream.Size(10))
	if err != nil {
		t.Fatal(err)
	}
	release := make(chan struct{})
	r := newRecorder()
	err = app.Process(a, s, "p", func(ctx context.Context, events *stream.Events[event]) error {
		for e := range events.All() {
			if e.Record.Seq == 0 {
				select { // stall on the first event while the stream overflows
				case <-release:
				case <-ctx.Done():
					return ctx.Err()
				}
			}
			r.add(e)
		}
		return nil
	}, app.OnError(app.DeadLetter), app.Prefetch(10))
	if err != nil {
		t.Fatal(err)
	}
	sendEvents(t, s, []string{"k"}, 1, 0)
	startWorker(t, a)
	redistest.Eventually(t, 10*time.Second, "the processor stalls", func() bool {
		n, _ := env.client.XInfoGroups(context.Background(), app.PartitionKey(s, 0)).Result()
		return len(n) == 1 && n[0].EntriesRead >= 1
	})
	sendEvents(t, s, []string{"k"}, 1000, 1)
	dlq := app.Keys(a).DeadLetter("small", "p")
	// The check runs every 5 heartbeats (300ms here); the report reaches the
	// policy ahead of the next entries read, once the processor goes on.
	select {
	case n := <-trimmed:
		if n < 500 {
			t.Fatalf("%d entries reported trimmed, want most of the 1000", n)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("no trim reported")
	}
	close(release)
	redistest.Eventually(t, 20*time.Second, "a dead letter for the trimmed entries", func() bool {
		return env.client.XLen(context.Background(), dlq).Val() == 1
	})
	m := env.client.XRange(context.Background(), dlq, "-", "+").Val()[0]
	msg, _ := m.Values[executor.DeadError].(string)
	if !strings.Contains(msg, "removed from the stream before the processor read them") {
		t.Fatalf("dead letter %v", m.Values)
	}
	redistest.Eventually(t, 10*time.Second, "the newest event", func() bool {
		r.mu.Lock()
		defer r.mu.Unlock()
		return r.seen["k/1000"] == 1 && r.seen["k/0"] == 1
	})
}

type trimObserver struct {
	ch chan int64
}

func (o trimObserver) OnEntriesTrimmed(_, _ string, _ int, n int64) {
	select {
	case o.ch <- n:
	default:
	}
}
