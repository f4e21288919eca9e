package bench

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/leatdev/leat/task"
	"github.com/redis/go-redis/v9"
)

// BenchmarkTasks is the name of the task queue benchmark.
const BenchmarkTasks = "tasks"

// Settings of the task benchmark.
const (
	taskQueue       = "bench"
	taskConcurrency = 50
	taskRetention   = time.Hour
)

// Tasks measures running cfg.Events no-op tasks, results stored, with a
// leat worker against a raw go-redis loop doing a task's Redis work without
// leat's bookkeeping. Enqueueing is not timed. See the package
// documentation. Every key it wrote is deleted before it returns.
func Tasks(ctx context.Context, client redis.UniversalClient, cfg Config) (res Result, err error) {
	cfg, err = cfg.withDefaults()
	if err != nil {
		return Result{}, err
	}
	sp, err := newSpace(client)
	if err != nil {
		return Result{}, err
	}
	defer func() { err = errors.Join(err, sp.drop(ctx)) }()
	recs := records(cfg.Events, cfg.PayloadBytes)
	vs, err := measure(ctx, cfg, sp, []variant{
		{VariantLeat, func(ctx context.Context) (time.Duration, error) { return tasksLeat(ctx, sp, cfg, recs) }},
		{VariantRaw, func(ctx context.Context) (time.Duration, error) { return tasksRaw(ctx, sp, cfg, recs) }},
	})
	if err != nil {
		return Result{}, err
	}
	return newResult(BenchmarkTasks, cfg, vs), nil
}

// tasksLeat enqueues recs as tasks, then times a worker running them all
// with a no-op handler at concurrency 50.
func tasksLeat(ctx context.Context, sp space, cfg Config, recs []record) (time.Duration, error) {
	a, err := sp.newApp(cfg)
	if err != nil {
		return 0, err
	}
	defer a.Close()
	q, err := task.Handle(a, taskQueue, func(ctx context.Context, t *task.Task[record]) (int64, error) {
		return t.Payload.ID, nil
	}, task.Concurrency(taskConcurrency), task.Retention(taskRetention))
	if err != nil {
		return 0, err
	}
	if _, err := q.EnqueueMany(ctx, recs); err != nil {
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
	stop()
	return d, <-done
}

// tasksRaw writes a hash and a stream entry per record (untimed), then
// times one consumer looping over XREADGROUP (COUNT 100) and, per reply, a
// pipeline that stores each result in its hash with a TTL and acknowledges
// and deletes the entries. It has no retries, states, counts or
// concurrency control: it is the floor of a task's Redis work.
func tasksRaw(ctx context.Context, sp space, cfg Config, recs []record) (time.Duration, error) {
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
	return time.Since(start), nil
}
