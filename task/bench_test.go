package task_test

import (
	"context"
	"testing"
	"time"

	"github.com/leatdev/leat/app"
	"github.com/leatdev/leat/internal/redistest"
	"github.com/leatdev/leat/task"
)

// BenchmarkNoopTasks runs b.N no-op tasks, results stored, on one worker at
// concurrency 50 and reports tasks/s. Enqueueing is not timed.
//
//	go test -run '^$' -bench NoopTasks -benchtime 100000x ./task
func BenchmarkNoopTasks(b *testing.B) {
	c, prefix := redistest.Client(b)
	ctx := context.Background()
	a, err := app.New(app.Config{Name: "bench", Client: c, KeyPrefix: prefix, Logger: testLogger()})
	if err != nil {
		b.Fatal(err)
	}
	q, err := task.Handle(a, "noop", func(ctx context.Context, t *task.Task[job]) (out, error) {
		return out{Double: t.Payload.N}, nil
	}, task.Concurrency(50))
	if err != nil {
		b.Fatal(err)
	}
	ps := make([]job, b.N)
	for i := range ps {
		ps[i] = job{N: i}
	}
	if _, err := q.EnqueueMany(ctx, ps); err != nil {
		b.Fatal(err)
	}
	wctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	b.ResetTimer()
	start := time.Now()
	go func() { done <- a.Run(wctx) }()
	for {
		n, err := q.Counts(ctx)
		if err != nil {
			b.Fatal(err)
		}
		if n[task.Succeeded] >= int64(b.N) {
			break
		}
		time.Sleep(2 * time.Millisecond)
	}
	b.StopTimer()
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "tasks/s")
	stop()
	if err := <-done; err != nil {
		b.Fatal(err)
	}
}
