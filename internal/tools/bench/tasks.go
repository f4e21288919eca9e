package bench

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/leatdev/leat/task"
	"github.com/redis/go-redis/v9"
)

// BenchmarkTasks is the name of the task queue benchmark.
const BenchmarkTasks = "tasks"

// Settings of the task benchmark.
const (
	taskQueue     = "bench"
	taskRetention = time.Hour
)

// TaskConcurrencies are the concurrencies at which the task benchmark runs
// leat's workers.
var TaskConcurrencies = []int{10, 50}

// Tasks measures running cfg.Events no-op tasks, results stored, with a
// leat worker at each of TaskConcurrencies against a raw go-redis loop
// doing a task's Redis work without leat's bookkeeping. Enqueueing is not
// timed. See the package documentation. Every key it wrote is deleted
// before it returns.
func Tasks(ctx context.Context, client redis.UniversalClient, cfg Config) (Result, error) {
	return run(ctx, client, cfg, BenchmarkTasks, func(cfg Config, sp Space) ([]Workload, []Pair, error) {
		var ws []Workload
		var pairs []Pair
		for _, c := range TaskConcurrencies {
			w := LeatTasks(sp, cfg, c)
			ws = append(ws, w)
			pairs = append(pairs, Pair{w.Name, VariantRaw})
		}
		ws = append(ws, RawTasks(sp, cfg))
		return ws, pairs, nil
	})
}

// TaskVariant names leat's variant at a concurrency: "leat c50".
func TaskVariant(concurrency int) string { return fmt.Sprintf("%s c%d", VariantLeat, concurrency) }

// LeatTasks is the workload that enqueues cfg.Events tasks (untimed), then
// times a worker running them all with a no-op handler that returns the
// payload's ID, results stored, at the concurrency given.
func LeatTasks(sp Space, cfg Config, concurrency int) Workload {
	return TimedTasks(TaskVariant(concurrency), cfg.Events, sp.client, func(ctx context.Context, span *CPUSpan) (time.Duration, error) {
		return tasksLeat(ctx, sp, cfg, records(cfg.Events, cfg.PayloadBytes), concurrency, span)
	})
}

// RawTasks is the raw baseline of LeatTasks (see tasksRaw).
func RawTasks(sp Space, cfg Config) Workload {
	return TimedTasks(VariantRaw, cfg.Events, sp.client, func(ctx context.Context, span *CPUSpan) (time.Duration, error) {
		return tasksRaw(ctx, sp, cfg, records(cfg.Events, cfg.PayloadBytes), span)
	})
}

// LeatEnqueue is the workload that times enqueueing cfg.Events tasks one
// Enqueue call each, from the number of goroutines given, with the CPU
// each side spent per task.
func LeatEnqueue(sp Space, cfg Config, goroutines int) Workload {
	return TimedTasks(VariantLeat, cfg.Events, sp.client, func(ctx context.Context, span *CPUSpan) (time.Duration, error) {
		a, err := sp.NewApp(cfg)
		if err != nil {
			return 0, err
		}
		defer a.Close()
		q, err := task.Declare[record, int64](a, taskQueue, task.Retention(taskRetention))
		if err != nil {
			return 0, err
		}
		recs := records(cfg.Events, cfg.PayloadBytes)
		if err := span.Start(ctx); err != nil {
			return 0, err
		}
		start := time.Now()
		err = Spread(ctx, len(recs), goroutines, func(ctx context.Context, i int) error {
			_, err := q.Enqueue(ctx, recs[i])
			return err
		})
		d := time.Since(start)
		if err != nil {
			return 0, err
		}
		return d, span.Stop(ctx)
	})
}

// Spread calls fn for each i in [0, n) from the number of goroutines
// given, each taking the next i in turn, and returns the first error, after
// which the others stop.
func Spread(ctx context.Context, n, goroutines int, fn func(ctx context.Context, i int) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var next atomic.Int64
	errs := make(chan error, goroutines)
	for range goroutines {
		go func() {
			for {
				i := int(next.Add(1) - 1)
				if i >= n || ctx.Err() != nil {
					errs <- ctx.Err()
					return
				}
				if err := fn(ctx, i); err != nil {
					cancel()
					errs <- err
					return
				}
			}
		}()
	}
	var first error
	for range goroutines {
		if err := <-errs; err != nil && first == nil {
			first = err
		}
	}
	return first
}

// tasksLeat enqueues recs as tasks, then times a worker running them all
// with a no-op handler at the concurrency given.
func tasksLeat(ctx context.Context, sp Space, cfg Config, recs []record, concurrency int, span *CPUSpan) (time.Duration, error) {
	a, err := sp.NewApp(cfg)
	if err != nil {
		return 0, err
	}
	defer a.Close()
	q, err := task.Handle(a, taskQueue, func(ctx context.Context, t *task.Task[record]) (int64, error) {
		return t.Payload.ID, nil
	}, task.Concurrency(concurrency), task.Retention(taskRetention))
	if err != nil {
		return 0, err
	}
	if _, err := q.EnqueueMany(ctx, recs); err != nil {
		return 0, err
	}
	if err := span.Start(ctx); err != nil {
		return 0, err
	}
	wctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	start := time.Now()
	go func() { done <- a.Run(wctx) }()
	for {
		n, err := q.Counts(ctx)
		if err != nil {
			stop()
			<-done
			return 0, err
		}
		if n[task.Succeeded] >= int64(len(recs)) {
			break
		}
		select {
		case err := <-done:
			stop()
			return 0, fmt.Errorf("worker stopped: %v", err)
		case <-time.After(2 * time.Millisecond):
		}
	}
	d := time.Since(start)
	if err := span.Stop(ctx); err != nil {
		stop()
		<-done
		return 0, err
	}
	stop()
	return d, <-done
}

// tasksRaw writes a hash and a stream entry per record (untimed), then
// times one consumer looping over XREADGROUP (COUNT 100) and, per reply, a
// pipeline that stores each result in its hash with a TTL and acknowledges
// and deletes the entries. It has no retries, states, counts or
// concurrency control: it is the floor of a task's Redis work.
func tasksRaw(ctx context.Context, sp Space, cfg Config, recs []record, span *CPUSpan) (time.Duration, error) {
	c := sp.client
	stream := sp.prefix + ":raw-tasks"
	if err := c.XGroupCreateMkStream(ctx, stream, group, "0").Err(); err != nil {
		return 0, err
	}
	pipe := c.Pipeline()
	for i, r := range recs {
		id := strconv.Itoa(i)
		pipe.HSet(ctx, sp.prefix+":raw-task:"+id, "p", r.Note, "s", "pending")
		pipe.XAdd(ctx, &redis.XAddArgs{Stream: stream, Values: []any{"t", id}})
		if pipe.Len() >= 2000 {
			if _, err := pipe.Exec(ctx); err != nil {
				return 0, err
			}
		}
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return 0, err
	}
	if err := span.Start(ctx); err != nil {
		return 0, err
	}
	start := time.Now()
	left := len(recs)
	for left > 0 {
		res, err := c.XReadGroup(ctx, &redis.XReadGroupArgs{
			Group: group, Consumer: "raw", Streams: []string{stream, ">"}, Count: readCount, Block: readBlock,
		}).Result()
		if errors.Is(err, redis.Nil) {
			continue
		}
		if err != nil {
			return 0, err
		}
		p := c.Pipeline()
		for _, m := range res[0].Messages {
			h := sp.prefix + ":raw-task:" + m.Values["t"].(string)
			p.HSet(ctx, h, "s", "succeeded", "res", m.Values["t"])
			p.PExpire(ctx, h, taskRetention)
			p.XAck(ctx, stream, group, m.ID)
			p.XDel(ctx, stream, m.ID)
			left--
		}
		if _, err := p.Exec(ctx); err != nil {
			return 0, err
		}
	}
	d := time.Since(start)
	return d, span.Stop(ctx)
}
