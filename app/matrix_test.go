package app_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/leatdev/leat/app"
	"github.com/leatdev/leat/internal/tools/redistest"
	"github.com/leatdev/leat/stream"
)

// Acceptance 2: partitions × prefetch × batch × workers, 333 events sent
// before the workers start, each processed exactly once, batches never
// larger than requested.
func TestMatrix(t *testing.T) {
	t.Parallel()
	for _, parts := range []int{1, 8} {
		for _, prefetch := range []int{1, 50} {
			for _, batch := range []int{1, 24} {
				for _, workers := range []int{1, 3} {
					name := fmt.Sprintf("partitions=%d/prefetch=%d/batch=%d/workers=%d", parts, prefetch, batch, workers)
					t.Run(name, func(t *testing.T) {
						t.Parallel()
						runMatrixCase(t, parts, prefetch, batch, workers)
					})
				}
			}
		}
	}
}

func runMatrixCase(t *testing.T, parts, prefetch, batch, workers int) {
	env := newEnv(t)
	r := newRecorder()
	var tooBig atomic.Int64
	var sent []event
	var ws []*worker
	for i := range workers {
		a, s := env.newApp(parts, func(c *app.Config) { c.Processing.Prefetch = prefetch })
		var fn func(context.Context, *stream.Events[event]) error
		if batch == 1 {
			fn = collect(r)
		} else {
			fn = func(ctx context.Context, events *stream.Events[event]) error {
				for b := range events.Batches(batch, 100*time.Millisecond) {
					if len(b) > batch || len(b) == 0 {
						tooBig.Add(1)
					}
					for _, e := range b {
						r.add(e)
					}
				}
				return nil
			}
		}
		if err := app.Process(a, s, "p", fn); err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			for k := range 333 {
				sent = append(sent, sendEvents(t, s, []string{fmt.Sprintf("key-%d", k%41)}, 1, k)...)
			}
		}
		ws = append(ws, startWorker(t, a))
	}
	redistest.Eventually(t, 30*time.Second, "333 events", func() bool { return r.count() >= len(sent) })
	for _, w := range ws {
		if err := w.stop(t); err != nil {
			t.Fatal(err)
		}
	}
	r.exactlyOnce(t, sent)
	r.inOrder(t, false)
	if n := tooBig.Load(); n > 0 {
		t.Fatalf("%d batches were empty or larger than %d", n, batch)
	}
}
