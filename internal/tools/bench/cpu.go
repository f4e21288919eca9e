package bench

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// Figures beside a rate: what each task (of the task benchmark) or event
// (of process and produce+consume) cost the Redis server's CPU and this
// process's (the worker or the raw loop, both in the benchmark's process),
// while they ran. On a host where both share the cores, they tell which
// one bounds the rate.
const (
	FigureRedisCPU       = "Redis CPU µs/task"
	FigureClientCPU      = "client CPU µs/task"
	FigureEventRedisCPU  = "Redis CPU µs/event"
	FigureEventClientCPU = "client CPU µs/event"
)

// CPUSpan measures the CPU time Redis and this process use between Start
// and Stop.
type CPUSpan struct {
	c             redis.UniversalClient
	redis0, self0 time.Duration
	redis, self   time.Duration
}

// Start starts the span.
func (s *CPUSpan) Start(ctx context.Context) error {
	r, err := redisCPU(ctx, s.c)
	if err != nil {
		return err
	}
	s.redis0, s.self0 = r, selfCPU()
	return nil
}

// Stop ends the span.
func (s *CPUSpan) Stop(ctx context.Context) error {
	r, err := redisCPU(ctx, s.c)
	if err != nil {
		return err
	}
	s.redis, s.self = r-s.redis0, selfCPU()-s.self0
	return nil
}

// perItem returns the figures of a span for n tasks or events that ran in
// d: their rate, then Redis's and this process's CPU µs per item.
func (s *CPUSpan) perItem(n int, d time.Duration) []float64 {
	us := func(t time.Duration) float64 { return float64(t.Microseconds()) / float64(max(n, 1)) }
	return []float64{float64(n) / max(d.Seconds(), 1e-9), us(s.redis), us(s.self)}
}

// TimedTasks is Timed for n tasks with the CPU figures: run starts the span
// when the tasks start and stops it when they are done.
func TimedTasks(name string, n int, c redis.UniversalClient, run func(ctx context.Context, span *CPUSpan) (time.Duration, error)) Workload {
	return timedCPU(name, []string{FigureTaskRate, FigureRedisCPU, FigureClientCPU}, n, c, run)
}

// TimedEvents is TimedTasks for n events.
func TimedEvents(name string, n int, c redis.UniversalClient, run func(ctx context.Context, span *CPUSpan) (time.Duration, error)) Workload {
	return timedCPU(name, []string{FigureRate, FigureEventRedisCPU, FigureEventClientCPU}, n, c, run)
}

func timedCPU(name string, figures []string, n int, c redis.UniversalClient, run func(ctx context.Context, span *CPUSpan) (time.Duration, error)) Workload {
	return Workload{Name: name, Figures: figures, Run: func(ctx context.Context) ([]float64, error) {
		span := &CPUSpan{c: c}
		d, err := run(ctx, span)
		if err != nil {
			return nil, err
		}
		return span.perItem(n, d), nil
	}}
}

// redisCPU returns the CPU time the server used so far (INFO cpu:
// used_cpu_sys + used_cpu_user, of all its threads).
func redisCPU(ctx context.Context, c redis.UniversalClient) (time.Duration, error) {
	info, err := c.Info(ctx, "cpu").Result()
	if err != nil {
		return 0, err
	}
	var total float64
	seen := 0
	for _, line := range strings.Split(info, "\n") {
		name, v, ok := strings.Cut(strings.TrimSpace(line), ":")
		if !ok || name != "used_cpu_sys" && name != "used_cpu_user" {
			continue
		}
		f, err := strconv.ParseFloat(v, 64)
		if err != nil {
			return 0, err
		}
		total += f
		seen++
	}
	if seen != 2 {
		return 0, errors.New("bench: no used_cpu_sys and used_cpu_user in INFO cpu")
	}
	return time.Duration(total * float64(time.Second)), nil
}
