package task_test

import (
	"context"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/leatdev/leat/app"
	"github.com/leatdev/leat/internal/tools/redistest"
	"github.com/leatdev/leat/task"
	"github.com/redis/go-redis/v9"
)

// BenchmarkNoopTasks runs b.N no-op tasks, results stored, on one worker at
// concurrency 50 (LEAT_BENCH_CONCURRENCY sets another) and reports tasks/s and cpu-ns/task, the client's CPU time
// per task (the worker's, which the machine's load moves less than the
// rate). Enqueueing is not timed.
//
//	go test -run '^$' -bench NoopTasks -benchtime 100000x ./task
func BenchmarkNoopTasks(b *testing.B) { runNoopTasks(b, nil) }

// BenchmarkGlobalConcurrency runs BenchmarkNoopTasks's tasks with a global
// concurrency that does not bind (the cost of the check and of the wakes)
// and with one that does (half the worker's concurrency).
func BenchmarkGlobalConcurrency(b *testing.B) {
	for _, tc := range []struct {
		name string
		n    int
	}{{"off", 0}, {"above", 2 * benchConcurrency}, {"half", benchConcurrency / 2}} {
		b.Run(tc.name, func(b *testing.B) {
			runNoopTasks(b, func(ctx context.Context, q *task.Queue[job, out]) error {
				return q.SetGlobalConcurrency(ctx, tc.n)
			})
		})
	}
}

// runNoopTasks runs b.N no-op tasks enqueued beforehand through one worker
// of concurrency benchConcurrency, after prepare (if any) set the queue up.
func runNoopTasks(b *testing.B, prepare func(context.Context, *task.Queue[job, out]) error) {
	c, prefix := redistest.Client(b)
	ctx := context.Background()
	a, err := app.New(app.Config{Name: "bench", Client: c, KeyPrefix: prefix, Logger: testLogger()})
	if err != nil {
		b.Fatal(err)
	}
	q, err := task.Handle(a, "noop", func(ctx context.Context, t *task.Task[job]) (out, error) {
		return out{Double: t.Payload.N}, nil
	}, task.Concurrency(benchConcurrency))
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
	if prepare != nil {
		if err := prepare(ctx, q); err != nil {
			b.Fatal(err)
		}
	}
	wctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	b.ResetTimer()
	cpu, rcpu := clientCPU(b), redisCPU(b, c)
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
	b.ReportMetric(float64(clientCPU(b)-cpu)/float64(b.N), "cpu-ns/task")
	b.ReportMetric(float64(redisCPU(b, c)-rcpu)/float64(b.N), "redis-cpu-ns/task")
	stop()
	if err := <-done; err != nil {
		b.Fatal(err)
	}
}

// clientCPU returns the CPU time (user and system) the test process has
// used, in nanoseconds: the worker's cost, without the server's.
func clientCPU(b *testing.B) int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}

// redisCPU returns the CPU time (user and system) the Redis server has
// used, in nanoseconds (INFO cpu): the cost the load of the machine moves
// least.
func redisCPU(b *testing.B, c *redis.Client) int64 {
	info, err := c.Info(context.Background(), "cpu").Result()
	if err != nil {
		b.Fatal(err)
	}
	var total float64
	for _, line := range strings.Split(info, "\r\n") {
		k, v, _ := strings.Cut(line, ":")
		if k == "used_cpu_sys" || k == "used_cpu_user" {
			f, _ := strconv.ParseFloat(v, 64)
			total += f
		}
	}
	return int64(total * 1e9)
}

// benchConcurrency is BenchmarkNoopTasks's concurrency: 50, or
// LEAT_BENCH_CONCURRENCY.
var benchConcurrency = 50

func init() {
	if v := os.Getenv("LEAT_BENCH_CONCURRENCY"); v != "" {
		benchConcurrency, _ = strconv.Atoi(v)
	}
}

// BenchmarkQueueEvents runs BenchmarkNoopTasks's tasks with the queue's
// events off and on (every start and end an entry of the events stream):
// the cost of events on the hot path.
//
//	go test -run '^$' -bench QueueEvents -benchtime 100000x ./task
func BenchmarkQueueEvents(b *testing.B) {
	for _, tc := range []struct {
		name string
		cap  int
	}{{"off", -1}, {"on", 0}} {
		b.Run(tc.name, func(b *testing.B) {
			runNoopTasks(b, func(ctx context.Context, q *task.Queue[job, out]) error {
				return q.SetEvents(ctx, tc.cap)
			})
		})
	}
}

// BenchmarkEnqueueEvents enqueues b.N tasks one per call from 16
// goroutines (the calls share round trips) with the queue's events off and
// on, and reports tasks/s.
//
//	go test -run '^$' -bench EnqueueEvents -benchtime 100000x ./task
func BenchmarkEnqueueEvents(b *testing.B) {
	for _, tc := range []struct {
		name string
		cap  int
	}{{"off", -1}, {"on", 0}} {
		b.Run(tc.name, func(b *testing.B) {
			c, prefix := redistest.Client(b)
			ctx := context.Background()
			a, err := app.New(app.Config{Name: "bench", Client: c, KeyPrefix: prefix, Logger: testLogger()})
			if err != nil {
				b.Fatal(err)
			}
			q, err := task.Declare[job, out](a, "enq")
			if err != nil {
				b.Fatal(err)
			}
			if err := q.SetEvents(ctx, tc.cap); err != nil {
				b.Fatal(err)
			}
			if _, err := q.Enqueue(ctx, job{}); err != nil { // registers the queue
				b.Fatal(err)
			}
			const goroutines = 16
			b.ResetTimer()
			start, rcpu := time.Now(), redisCPU(b, c)
			errs := make(chan error, goroutines)
			for g := range goroutines {
				go func() {
					for i := g; i < b.N; i += goroutines {
						if _, err := q.Enqueue(ctx, job{N: i}); err != nil {
							errs <- err
							return
						}
					}
					errs <- nil
				}()
			}
			for range goroutines {
				if err := <-errs; err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "tasks/s")
			b.ReportMetric(float64(redisCPU(b, c)-rcpu)/float64(b.N), "redis-cpu-ns/task")
		})
	}
}
