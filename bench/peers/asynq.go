package main

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/hibiken/asynq"
	"github.com/leatdev/leat/internal/tools/bench"
	"github.com/redis/go-redis/v9"
)

// asynqTaskType is the type of the no-op tasks.
const asynqTaskType = "noop"

// asynqQueue is the queue of a benchmark run: a name of its own, so that
// cleaning deletes only its keys.
func asynqQueue(sp bench.Space) string { return "leat-bench-" + sp.Prefix()[len(bench.PrefixRoot):] }

// asynqEnqueue is the workload that times enqueueing cfg.Events tasks with
// asynq, one Enqueue call each, from the number of goroutines given, each
// kept as completed with its result for an hour, with the CPU each side
// spent per task.
func asynqEnqueue(dial func() *redis.Client, sp bench.Space, cfg bench.Config, goroutines int) bench.Workload {
	return bench.TimedTasks(peerAsynq, cfg.Events, sp.Client(), func(ctx context.Context, span *bench.CPUSpan) (time.Duration, error) {
		client := dial()
		defer client.Close()
		c := asynq.NewClientFromRedisClient(client)
		defer c.Close()
		payload := make([]byte, cfg.PayloadBytes)
		if err := span.Start(ctx); err != nil {
			return 0, err
		}
		start := time.Now()
		err := bench.Spread(ctx, cfg.Events, goroutines, func(ctx context.Context, i int) error {
			_, err := c.EnqueueContext(ctx, asynq.NewTask(asynqTaskType, payload), asynq.Queue(asynqQueue(sp)), asynq.Retention(time.Hour))
			return err
		})
		d := time.Since(start)
		if err != nil {
			return 0, err
		}
		return d, span.Stop(ctx)
	})
}

// asynqTasks is the workload that enqueues cfg.Events tasks (untimed),
// then times an asynq server running them with a no-op handler that writes
// a result, at the concurrency given: from starting the server to the last
// task completed.
func asynqTasks(dial func() *redis.Client, sp bench.Space, cfg bench.Config, concurrency int) bench.Workload {
	name := fmt.Sprintf("%s c%d", peerAsynq, concurrency)
	return bench.TimedTasks(name, cfg.Events, sp.Client(), func(ctx context.Context, span *bench.CPUSpan) (time.Duration, error) {
		client := dial()
		defer client.Close()
		payload := make([]byte, cfg.PayloadBytes)
		if err := asynqFill(ctx, client, asynqQueue(sp), cfg.Events, payload); err != nil {
			return 0, fmt.Errorf("enqueue: %w", err)
		}
		return asynqWork(ctx, client, asynqQueue(sp), cfg.Events, concurrency, span)
	})
}

// asynqFill enqueues n tasks of the payload given on queue q from
// enqueueGoroutines goroutines, each kept as completed with its result for
// an hour.
func asynqFill(ctx context.Context, client *redis.Client, q string, n int, payload []byte) error {
	c := asynq.NewClientFromRedisClient(client)
	defer c.Close()
	return bench.Spread(ctx, n, enqueueGoroutines, func(ctx context.Context, i int) error {
		_, err := c.EnqueueContext(ctx, asynq.NewTask(asynqTaskType, payload), asynq.Queue(q), asynq.Retention(time.Hour))
		return err
	})
}

// asynqWork runs an asynq server on queue q at the concurrency given, with
// a no-op handler that writes a result, until n tasks are completed, and
// returns the time from its start to the last. span, if not nil, covers
// the same time.
func asynqWork(ctx context.Context, client *redis.Client, q string, n, concurrency int, span *bench.CPUSpan) (time.Duration, error) {
	srv := asynq.NewServerFromRedisClient(client, asynq.Config{
		Concurrency: concurrency, Queues: map[string]int{q: 1}, LogLevel: asynq.ErrorLevel,
	})
	completed := "asynq:{" + q + "}:completed"
	if span != nil {
		if err := span.Start(ctx); err != nil {
			return 0, err
		}
	}
	start := time.Now()
	if err := srv.Start(asynq.HandlerFunc(func(ctx context.Context, t *asynq.Task) error {
		_, err := t.ResultWriter().Write([]byte(strconv.Itoa(len(t.Payload()))))
		return err
	})); err != nil {
		return 0, err
	}
	defer srv.Shutdown()
	for {
		done, err := client.ZCard(ctx, completed).Result()
		if err != nil {
			return 0, err
		}
		if done >= int64(n) {
			d := time.Since(start)
			if span != nil {
				return d, span.Stop(ctx)
			}
			return d, nil
		}
		t := time.NewTimer(2 * time.Millisecond)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return 0, ctx.Err()
		}
	}
}

// asynqClean deletes the benchmark queue's keys.
func asynqClean(ctx context.Context, client *redis.Client, sp bench.Space) error {
	q := asynqQueue(sp)
	it := client.Scan(ctx, 0, "asynq:{"+q+"}:*", 1000).Iterator()
	var batch []string
	for it.Next(ctx) {
		batch = append(batch, it.Val())
		if len(batch) == 1000 {
			if err := client.Unlink(ctx, batch...).Err(); err != nil {
				return err
			}
			batch = batch[:0]
		}
	}
	if err := it.Err(); err != nil {
		return err
	}
	if len(batch) > 0 {
		if err := client.Unlink(ctx, batch...).Err(); err != nil {
			return err
		}
	}
	if err := client.SRem(ctx, "asynq:queues", q).Err(); err != nil && !errors.Is(err, redis.Nil) {
		return err
	}
	return nil
}
