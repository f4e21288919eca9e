package app_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/leatdev/leat/app"
	"github.com/leatdev/leat/internal/tools/redistest"
	"github.com/leatdev/leat/stream"
)

func collect(r *recorder) func(ctx context.Context, events *stream.Events[event]) error {
	return func(ctx context.Context, events *stream.Events[event]) error {
		for e := range events.All() {
			r.add(e)
		}
		return nil
	}
}

// Acceptance 1: 10 events with random keys over 2 partitions, 1 worker.
func TestProcessEachOnce(t *testing.T) {
	t.Parallel()
	env := newEnv(t)
	a, s := env.newApp(2, nil)
	r := newRecorder()
	if err := app.Process(a, s, "p", collect(r)); err != nil {
		t.Fatal(err)
	}
	var sent []event
	for i := range 10 {
		sent = append(sent, sendEvents(t, s, []string{fmt.Sprintf("k%d", rand.IntN(1000))}, 1, i)...)
	}
	w := startWorker(t, a)
	redistest.Eventually(t, 10*time.Second, "10 events", func() bool { return r.total() >= 10 })
	if err := w.stop(t); err != nil {
		t.Fatal(err)
	}
	r.exactlyOnce(t, sent)
	for _, e := range r.events {
		if p, _ := s.Partition(e.Record); p != e.Partition || e.ID == "" || string(e.Key) != e.Record.Key || e.Deliveries != 1 || e.Redelivered() {
			t.Errorf("event %+v: partition want %d", e, p)
		}
	}
}

// A new group starting at Latest skips what was sent before it existed.
func TestStartLatest(t *testing.T) {
	t.Parallel()
	env := newEnv(t)
	a, s := env.newApp(2, nil)
	r := newRecorder()
	if err := app.Process(a, s, "p", collect(r), app.StartFrom(app.Latest)); err != nil {
		t.Fatal(err)
	}
	sendEvents(t, s, []string{"a", "b", "c"}, 3, 0)
	startWorker(t, a)
	redistest.Eventually(t, 10*time.Second, "partitions owned", func() bool {
		ex := a.Executors()
		return len(ex) == 1 && len(ex[0].Owned()) == 2
	})
	later := sendEvents(t, s, []string{"a", "b", "c"}, 2, 10)
	redistest.Eventually(t, 10*time.Second, "the later events", func() bool { return r.count() >= len(later) })
	r.exactlyOnce(t, later)
}

// Two processors of one stream are two consumer groups: each sees every
// event once, at its own pace.
func TestTwoProcessorsOneStream(t *testing.T) {
	t.Parallel()
	env := newEnv(t)
	a, s := env.newApp(4, nil)
	r1, r2 := newRecorder(), newRecorder()
	if err := app.Process(a, s, "first", collect(r1)); err != nil {
		t.Fatal(err)
	}
	if err := app.Process(a, s, "second", collect(r2)); err != nil {
		t.Fatal(err)
	}
	if err := app.Process(a, s, "first", collect(r2)); err == nil {
		t.Fatal("a second processor called first on the same stream was accepted")
	}
	sent := sendEvents(t, s, []string{"a", "b", "c", "d"}, 25, 0)
	w := startWorker(t, a)
	redistest.Eventually(t, 10*time.Second, "both processors", func() bool { return r1.count() == 100 && r2.count() == 100 })
	if err := w.stop(t); err != nil {
		t.Fatal(err)
	}
	r1.exactlyOnce(t, sent)
	r2.exactlyOnce(t, sent)
	r1.inOrder(t, false)
	r2.inOrder(t, false)
}
