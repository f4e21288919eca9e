package task_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/leatdev/leat/app"
	"github.com/leatdev/leat/internal/tools/redistest"
	"github.com/leatdev/leat/task"
)

// benchKeys is how many keys BenchmarkKeyedTasks spreads its tasks over:
// few, so that the key concurrency, not the worker's, bounds the tasks
// running at once.
const benchKeys = 8

// BenchmarkKeyedTasks runs b.N no-op tasks of a keyed queue, spread evenly
// over 8 keys and enqueued beforehand, on one worker at concurrency 50,
// with a key concurrency of 1 (at most 8 tasks at once) and of 4 (32), and
// reports tasks/s and cpu-ns/task as BenchmarkNoopTasks does.
//
//	go test -run '^$' -bench KeyedTasks -benchtime 20000x ./task
func BenchmarkKeyedTasks(b *testing.B) {
	for _, n := range []int{1, 4} {
		b.Run("n"+strconv.Itoa(n), func(b *testing.B) { runKeyedTasks(b, n) })
	}
}

func runKeyedTasks(b *testing.B, n int) {
	c, prefix := redistest.Client(b)
	ctx := context.Background()
	a, err := app.New(app.Config{Name: "bench", Client: c, KeyPrefix: prefix, Logger: testLogger()})
	if err != nil {
		b.Fatal(err)
	}
	q, err := task.Handle(a, "keyed", func(ctx context.Context, t *task.Task[job]) (out, error) {
		return out{Double: t.Payload.N}, nil
	}, task.Keyed(), task.KeyConcurrency(n), task.Concurrency(benchConcurrency))
	if err != nil {
		b.Fatal(err)
	}
	for k := range benchKeys {
		ps := make([]job, 0, b.N/benchKeys+1)
		for i := k; i < b.N; i += benchKeys {
			ps = append(ps, job{N: i})
		}
		if _, err := q.EnqueueMany(ctx, ps, task.Key("k"+strconv.Itoa(k))); err != nil {
			b.Fatal(err)
		}
	}
	wctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	b.ResetTimer()
	cpu := clientCPU(b)
	start := time.Now()
	go func() { done <- a.Run(wctx) }()
	for {
		counts, err := q.Counts(ctx)
		if err != nil {
			b.Fatal(err)
		}
		if counts[task.Succeeded] >= int64(b.N) {
			break
		}
		time.Sleep(2 * time.Millisecond)
	}
	b.StopTimer()
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "tasks/s")
	b.ReportMetric(float64(clientCPU(b)-cpu)/float64(b.N), "cpu-ns/task")
	stop()
	if err := <-done; err != nil {
		b.Fatal(err)
	}
}
