package app_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/leatdev/leat/app"
	"github.com/leatdev/leat/internal/tools/redistest"
	"github.com/leatdev/leat/stream"
)

// guarded declares a one-partition stream of size 100 that never trims
// unprocessed entries, and a processor recording what it processed; hold,
// while set, keeps the processor on its first event.
func guarded(t *testing.T, env *env, f stream.Full) (*app.App, *stream.Stream[event], *recorder, chan struct{}) {
	t.Helper()
	a, _ := env.newApp(1, nil)
	s, err := stream.Declare[event](a, "guarded", stream.KeyField("key"), stream.Partitions(1), stream.Size(100), stream.WhenFull(f))
	if err != nil {
		t.Fatal(err)
	}
	r := newRecorder()
	hold := make(chan struct{})
	var once sync.Once
	err = app.Process(a, s, "p", func(ctx context.Context, events *stream.Events[event]) error {
		for e := range events.All() {
			once.Do(func() {
				select {
				case <-hold:
				case <-ctx.Done():
				}
			})
			if ctx.Err() != nil {
				return ctx.Err()
			}
			r.add(e)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return a, s, r, hold
}

func seqs(from, n int) []event {
	out := make([]event, n)
	for i := range out {
		out[i] = event{Key: "k", Seq: from + i}
	}
	return out
}

// WhenFull(Refuse): a send that would let retention trim unprocessed
// entries fails with ErrFull and sends nothing of that partition; once the
// processor caught up, sends go through; nothing is ever lost.
func TestWhenFullRefuse(t *testing.T) {
	t.Parallel()
	env := newEnv(t)
	a, s, r, hold := guarded(t, env, stream.Refuse)
	w := startWorker(t, a)
	ctx := context.Background()
	if _, err := s.SendMany(ctx, seqs(0, 100)); err != nil {
		t.Fatal(err)
	}
	redistest.Eventually(t, 10*time.Second, "the processor holding the first event", func() bool {
		return pendingCount(t, env, s, "p") > 0
	})
	ids, err := s.SendMany(ctx, seqs(100, 5))
	if !errors.Is(err, stream.ErrFull) || ids[0] != "" {
		t.Fatalf("send beyond the size: %v (ids %v), want stream.ErrFull and nothing sent", err, ids)
	}
	close(hold)
	redistest.Eventually(t, 10*time.Second, "the backlog processed", func() bool { return r.count() == 100 })
	redistest.Eventually(t, 10*time.Second, "room again", func() bool {
		_, err := s.SendMany(ctx, seqs(100, 50))
		return err == nil
	})
	redistest.Eventually(t, 10*time.Second, "150 events", func() bool { return r.count() == 150 })
	if err := w.stop(t); err != nil {
		t.Fatal(err)
	}
	r.exactlyOnce(t, seqs(0, 150))
	r.inOrder(t, false)
}

// WhenFull(Wait): a producer much faster than its processor waits for room
// instead of trimming: every one of 1,000 events through a partition of
// size 100 is processed exactly once, in order.
func TestWhenFullWait(t *testing.T) {
	t.Parallel()
	env := newEnv(t)
	a, s, r, hold := guarded(t, env, stream.Wait)
	close(hold)
	w := startWorker(t, a)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	// The guard protects the groups that exist: the processor's is created
	// when its worker takes the partition.
	redistest.Eventually(t, 10*time.Second, "the processor's group", func() bool {
		return len(env.client.XInfoGroups(ctx, app.PartitionKey(s, 0)).Val()) == 1
	})
	waited := time.Duration(0)
	for i := 0; i < 1000; i += 50 {
		start := time.Now()
		if _, err := s.SendMany(ctx, seqs(i, 50)); err != nil {
			t.Fatal(err)
		}
		waited += time.Since(start)
		if n := env.client.XLen(ctx, app.PartitionKey(s, 0)).Val(); n > 150 {
			t.Fatalf("partition length %d with a size of 100", n)
		}
	}
	redistest.Eventually(t, 30*time.Second, "1,000 events", func() bool { return r.count() == 1000 })
	if err := w.stop(t); err != nil {
		t.Fatal(err)
	}
	r.exactlyOnce(t, seqs(0, 1000))
	r.inOrder(t, false)
	t.Logf("the producer spent %s in sends", waited)
}

// Without the option, the same backlog is trimmed and the loss reported
// (the trim tests show the report); the option is refused when unknown.
func TestWhenFullOption(t *testing.T) {
	t.Parallel()
	env := newEnv(t)
	a, _ := env.newApp(1, nil)
	if _, err := stream.Declare[event](a, "x", stream.KeyField("key"), stream.WhenFull("drop")); err == nil {
		t.Fatal("an unknown policy was accepted")
	}
	s, err := stream.Declare[event](a, "y", stream.KeyField("key"), stream.WhenFull(stream.Refuse))
	if err != nil || s.Definition().WhenFull != stream.Refuse {
		t.Fatalf("declare: %v, %+v", err, s.Definition())
	}
}
