package middleware_test

import (
	"context"
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/leatdev/leat/app"
	"github.com/leatdev/leat/internal/tools/redistest"
	"github.com/leatdev/leat/middleware"
	"github.com/leatdev/leat/stream"
	"github.com/redis/go-redis/v9"
)

// dedupApp returns an app whose processor p counts records by Seq, with
// Dedup on the "idem" header.
func dedupApp(e *env, partitions int, seen *counter) (*app.App, *stream.Stream[event]) {
	a, s := e.newApp(partitions, nil)
	err := app.Process(a, s, "p", func(ctx context.Context, events *stream.Events[event]) error {
		for ev := range events.All() {
			seen.add(ev.Headers["idem"])
			seen.add("total")
		}
		return nil
	}, app.StartFrom(app.Earliest), app.Use(middleware.Dedup(middleware.DedupOptions{Header: "idem", TTL: time.Minute})))
	if err != nil {
		e.t.Fatal(err)
	}
	return a, s
}

func sendIdem(t *testing.T, s *stream.Stream[event], key, idem string, seq int) {
	t.Helper()
	_, err := s.SendMessages(context.Background(), []stream.Message[event]{{Record: event{Key: key, Seq: seq}, Headers: stream.Headers{"idem": idem}}})
	if err != nil {
		t.Fatal(err)
	}
}

// A duplicate is skipped by the same worker, by a worker started after a
// restart, and by whichever of two workers owns its partition.
func TestDedupAcrossWorkersAndRestarts(t *testing.T) {
	e := newEnv(t)
	seen := newCounter()
	a1, s1 := dedupApp(e, 4, seen)
	w1 := startWorker(t, a1)
	sendIdem(t, s1, "k", "x", 1)
	sendIdem(t, s1, "k", "x", 2) // a duplicate
	sendIdem(t, s1, "k", "y", 3)
	redistest.Eventually(t, 10*time.Second, "the first events", func() bool { return pending(t, e, a1) == 0 && seen.get("y") == 1 })
	if seen.get("x") != 1 {
		t.Fatalf("x processed %d times", seen.get("x"))
	}
	if err := w1.stop(t); err != nil {
		t.Fatal(err)
	}

	// A restart: a new worker remembers x and y.
	a2, s2 := dedupApp(e, 4, seen)
	startWorker(t, a2)
	a3, _ := dedupApp(e, 4, seen) // and a second worker beside it
	startWorker(t, a3)
	sendIdem(t, s2, "k", "x", 4)
	sendIdem(t, s2, "k", "y", 5)
	for i := range 20 { // two of each, spread over the partitions of both workers
		k := "key" + strconv.Itoa(i)
		sendIdem(t, s2, k, "z"+k, 10+i)
		sendIdem(t, s2, k, "z"+k, 100+i)
	}
	sendIdem(t, s2, "k", "last", 6)
	redistest.Eventually(t, 10*time.Second, "all events acknowledged", func() bool {
		return seen.get("last") == 1 && seen.get("total") == 23 && pending(t, e, a2) == 0
	})
	if seen.get("x") != 1 || seen.get("y") != 1 {
		t.Fatalf("after the restart: x %d, y %d", seen.get("x"), seen.get("y"))
	}
	for i := range 20 {
		if n := seen.get("zkey" + strconv.Itoa(i)); n != 1 {
			t.Fatalf("zkey%d processed %d times", i, n)
		}
	}
}

// fence is a partition fence that lost its partition.
type lostFence struct{ c *redis.Client }

func (f lostFence) Fenced(context.Context, func(redis.Pipeliner) error) error {
	return stream.ErrNotOwner
}
func (f lostFence) LocalKey(name string) string { return "lost:" + name }

// A worker that no longer owns the partition cannot mark an event done.
func TestDedupFencedOff(t *testing.T) {
	c, _ := redistest.Client(t)
	calls := 0
	h := middleware.Chain(func(context.Context, *middleware.Message) error { calls++; return nil },
		middleware.Dedup(middleware.DedupOptions{}))
	m := &middleware.Message{Processor: "p", Client: c, Fence: lostFence{c},
		Entries: []middleware.Entry{{ID: "1-0", Headers: stream.Headers{"idempotency-key": "a"}}}}
	for range 2 {
		if err := h(context.Background(), m); !errors.Is(err, stream.ErrNotOwner) {
			t.Fatalf("error %v", err)
		}
	}
	if calls != 2 {
		t.Fatalf("%d calls: the stale owner's record was kept", calls)
	}
	if err := middleware.Chain(nil, middleware.Dedup(middleware.DedupOptions{}))(context.Background(), &middleware.Message{}); !errors.Is(err, middleware.ErrDedupConfig) {
		t.Fatalf("no client: %v", err)
	}
}
