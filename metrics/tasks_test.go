package metrics_test

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/leatdev/leat/app"
	"github.com/leatdev/leat/executor"
	"github.com/leatdev/leat/inspect"
	"github.com/leatdev/leat/internal/rdb"
	"github.com/leatdev/leat/internal/tools/redistest"
	"github.com/leatdev/leat/metrics"
	"github.com/leatdev/leat/task"
)

// The exporter is a task hook.
var _ task.HookTaskRun = (*metrics.Exporter)(nil)

// After tasks ran (three succeed, one retries then succeeds, one dies),
// the run counters and histograms say what happened, the per-queue gauges
// what Redis holds.
func TestTaskMetrics(t *testing.T) {
	t.Parallel()
	c, prefix := redistest.Client(t)
	x, err := metrics.New(metrics.Config{CacheFor: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	a, err := app.New(app.Config{Name: "shop", Client: c, KeyPrefix: prefix, Hooks: []executor.Hook{x}, LeaderLease: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	var mu sync.Mutex
	tries := map[int]int{}
	jobs, err := task.Handle(a, "jobs", func(ctx context.Context, tk *task.Task[int]) (int, error) {
		mu.Lock()
		tries[tk.Payload]++
		n := tries[tk.Payload]
		mu.Unlock()
		switch {
		case tk.Payload == 3 && n == 1:
			return 0, errors.New("once")
		case tk.Payload == 4:
			return 0, errors.New("always")
		case tk.Payload == 5 && n == 1:
			return 0, task.Snooze(10 * time.Millisecond)
		}
		return tk.Payload, nil
	}, task.MaxRetries(1), task.Backoff(10*time.Millisecond, 20*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	// A queue nobody runs: its task waits.
	idle, err := task.Declare[int, int](a, "idle")
	if err != nil {
		t.Fatal(err)
	}
	in := inspect.New(c, prefix, "shop")
	x.GatherQueues(in, func() []string { return nil })
	h := metrics.NewHandler(x, nil)

	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan error, 1)
	go func() { stopped <- a.Run(ctx) }()
	defer func() { cancel(); <-stopped }()

	enqueued := time.Now()
	if _, err := idle.Enqueue(ctx, 1); err != nil {
		t.Fatal(err)
	}
	if err := idle.Pause(ctx); err != nil {
		t.Fatal(err)
	}
	if err := idle.SetRate(ctx, 5, 250*time.Millisecond); err != nil { // 20 tasks/s
		t.Fatal(err)
	}
	var ids []string
	for n := range 6 {
		id, err := jobs.Enqueue(ctx, n)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	for _, id := range ids {
		if _, err := jobs.Wait(ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	var body string
	redistest.Eventually(t, 10*time.Second, "metrics of 9 runs", func() bool {
		_, body = get(t, h, "/metrics")
		n, _ := sample(body, "leat_task_duration_seconds_count", `queue="jobs"`)
		return n == 9
	})
	counts := c.HGetAll(context.Background(), rdb.NewKeySpace(prefix, "shop").TaskCounts("jobs")).Val()
	redisCount := func(st string) float64 { n, _ := strconv.ParseFloat(counts[st], 64); return n }
	if redisCount("succeeded") != 5 || redisCount("dead") != 1 {
		t.Fatalf("counts in Redis %v", counts)
	}
	waited := time.Since(enqueued).Seconds()
	checks := []struct {
		metric string
		labels []string
		want   float64
	}{
		{"leat_task_runs_total", []string{`queue="jobs"`, `outcome="succeeded"`}, 5},
		{"leat_task_runs_total", []string{`queue="jobs"`, `outcome="retried"`}, 2}, // task 3 once, task 4 once
		{"leat_task_runs_total", []string{`queue="jobs"`, `outcome="snoozed"`}, 1}, // task 5 once
		{"leat_task_runs_total", []string{`queue="jobs"`, `outcome="dead"`}, 1},
		{"leat_task_duration_seconds_count", []string{`queue="jobs"`}, 9},
		{"leat_task_attempts_count", []string{`queue="jobs"`}, 6},
		{"leat_task_attempts_sum", []string{`queue="jobs"`}, 4*1 + 2 + 2},
		{"leat_task_attempts_bucket", []string{`queue="jobs"`, `le="1"`}, 4},
		{"leat_task_attempts_bucket", []string{`queue="jobs"`, `le="2"`}, 6},
		{"leat_task_queue_tasks", []string{`queue="jobs"`, `state="succeeded"`}, redisCount("succeeded")},
		{"leat_task_queue_tasks", []string{`queue="jobs"`, `state="dead"`}, redisCount("dead")},
		{"leat_task_queue_tasks", []string{`queue="jobs"`, `state="pending"`}, 0},
		{"leat_task_queue_tasks", []string{`queue="idle"`, `state="pending"`}, 1},
		{"leat_task_queue_oldest_ready_age_seconds", []string{`queue="jobs"`}, 0},
		{"leat_task_queue_workers", []string{`queue="jobs"`}, 1},
		{"leat_task_queue_workers", []string{`queue="idle"`}, 0},
		{"leat_task_queue_paused", []string{`queue="jobs"`}, 0},
		{"leat_task_queue_paused", []string{`queue="idle"`}, 1},
		{"leat_task_queue_rate_limit_per_second", []string{`queue="idle"`}, 20},
		{"leat_task_queue_rate_limit_per_second", []string{`queue="jobs"`}, 0},
		{"leat_gather_errors_total", nil, 0},
	}
	for _, ck := range checks {
		if v, ok := sample(body, ck.metric, ck.labels...); !ok || v != ck.want {
			t.Errorf("%s%v = %v (found %v), want %v", ck.metric, ck.labels, v, ok, ck.want)
		}
	}
	if v, ok := sample(body, "leat_task_queue_oldest_ready_age_seconds", `queue="idle"`); !ok || v < 0 || v > waited+1 {
		t.Errorf("oldest ready age of idle: %v (found %v), want 0..%.1f", v, ok, waited+1)
	}
	// 6 tasks finished within the last minute, counted over 50 to 60 seconds.
	if v, ok := sample(body, "leat_task_queue_finished_per_second", `queue="jobs"`, `window="1m"`); !ok || v < 6.0/60 || v > 6.0/50 {
		t.Errorf("throughput over 1m: %v (found %v), want 6 tasks over 50..60 s", v, ok)
	}
	if v, ok := sample(body, "leat_task_queue_finished_per_second", `queue="jobs"`, `window="5m"`); !ok || v < 6.0/300 || v > 6.0/290 {
		t.Errorf("throughput over 5m: %v (found %v), want 6 tasks over 290..300 s", v, ok)
	}
}
