package cmd

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/leatdev/leat/app"
	"github.com/leatdev/leat/executor"
	"github.com/leatdev/leat/inspect"
	"github.com/leatdev/leat/internal/rdb"
	"github.com/leatdev/leat/internal/tools/redistest"
	"github.com/leatdev/leat/metrics"
	"github.com/leatdev/leat/stream"
	"github.com/leatdev/leat/task"
	"github.com/redis/go-redis/v9"
)

// costShop is app "shop" on a private, otherwise idle server: stream
// orders with a processor, task queue jobs.
type costShop struct {
	shop
	orders *stream.Stream[costOrder]
	jobs   *task.Queue[int, int]
	a      *app.App
}

type costOrder struct {
	Customer string `msgpack:"customer"`
}

// newCostShop runs a worker until the processor has processed a few
// entries per partition and the queue has run ran tasks, stops it, then
// enqueues pending tasks so that the queue holds tasks in all.
func newCostShop(t *testing.T, partitions, ran, tasks int) costShop {
	t.Helper()
	srv := redistest.Start(t)
	c := srv.Client(t)
	s := costShop{shop: shop{client: c, keys: rdb.NewKeySpace("", "shop"), global: []string{"--redis", "redis://" + srv.Addr, "--app", "shop"}}}
	a, err := app.New(app.Config{Name: "shop", Client: c, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Processing: executor.Options{LockExpiry: 5 * time.Second, ReadBlock: 100 * time.Millisecond, Grace: time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	s.a = a
	if s.orders, err = stream.Declare[costOrder](a, "orders", stream.KeyField("customer"), stream.Partitions(partitions)); err != nil {
		t.Fatal(err)
	}
	var processed atomic.Int64
	err = app.Process(a, s.orders, "totals", func(ctx context.Context, events *stream.Events[costOrder]) error {
		for range events.All() {
			processed.Add(1)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if s.jobs, err = task.Handle(a, "jobs", func(ctx context.Context, tk *task.Task[int]) (int, error) { return tk.Payload, nil },
		task.Concurrency(50)); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan error, 1)
	go func() { stopped <- a.Run(ctx) }()
	recs := make([]costOrder, 4*partitions)
	for i := range recs {
		recs[i] = costOrder{Customer: "c" + strconv.Itoa(i)}
	}
	if _, err := s.orders.SendMany(ctx, recs); err != nil {
		t.Fatal(err)
	}
	s.enqueue(t, ran)
	redistest.Eventually(t, 120*time.Second, "entries processed and tasks run", func() bool {
		counts, err := s.jobs.Counts(ctx)
		return err == nil && processed.Load() >= int64(len(recs)) && counts[task.Succeeded] == int64(ran)
	})
	cancel()
	if err := <-stopped; err != nil {
		t.Fatal(err)
	}
	s.enqueue(t, tasks-ran)
	counts, err := s.jobs.Counts(context.Background())
	if err != nil || counts[task.Pending] != int64(tasks-ran) || counts[task.Succeeded] != int64(ran) {
		t.Fatalf("counts %v, %v; want %d pending, %d succeeded", counts, err, tasks-ran, ran)
	}
	if n := c.XLen(context.Background(), s.keys.TaskStream("jobs", 0)).Val(); n != int64(tasks-ran) {
		t.Fatalf("%d ready entries, want %d", n, tasks-ran)
	}
	return s
}

// enqueue enqueues n tasks, 10,000 a call.
func (s costShop) enqueue(t *testing.T, n int) {
	t.Helper()
	for n > 0 {
		ps := make([]int, min(n, 10_000))
		if _, err := s.jobs.EnqueueMany(context.Background(), ps); err != nil {
			t.Fatal(err)
		}
		n -= len(ps)
	}
}

// cost is what Redis spent on one operation, averaged over runs.
type cost struct {
	cpu   time.Duration    // used_cpu_user + used_cpu_sys (INFO CPU)
	usec  float64          // time in commands (INFO COMMANDSTATS usec)
	calls map[string]int64 // calls per command
}

func (c cost) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "CPU %.2f ms, in commands %.2f ms:", float64(c.cpu.Microseconds())/1000, c.usec/1000)
	for _, name := range slices.Sorted(func(yield func(string) bool) {
		for k := range c.calls {
			if !yield(k) {
				return
			}
		}
	}) {
		fmt.Fprintf(&b, " %s %d", name, c.calls[name])
	}
	return b.String()
}

// measure runs op runs times on the otherwise idle server of c and returns
// its cost per run; the INFO and CONFIG calls of the measure are left out.
func measure(t *testing.T, c *redis.Client, runs int, op func()) cost {
	t.Helper()
	ctx := context.Background()
	if err := c.ConfigResetStat(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	before := cpu(t, c)
	for range runs {
		op()
	}
	spent := cpu(t, c) - before
	out := cost{cpu: spent / time.Duration(runs), calls: map[string]int64{}}
	stats, err := c.Info(ctx, "commandstats").Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(stats, "\n") {
		name, fields, ok := strings.Cut(strings.TrimSpace(strings.TrimPrefix(line, "cmdstat_")), ":")
		if !ok || strings.HasPrefix(name, "info") || strings.HasPrefix(name, "config") {
			continue
		}
		for _, f := range strings.Split(fields, ",") {
			k, v, _ := strings.Cut(f, "=")
			n, _ := strconv.ParseInt(v, 10, 64)
			switch k {
			case "calls":
				if n%int64(runs) != 0 {
					t.Errorf("%s: %d calls in %d runs", name, n, runs)
				}
				out.calls[name] = n / int64(runs)
			case "usec":
				out.usec += float64(n) / float64(runs)
			}
		}
	}
	return out
}

// cpu returns the server's CPU time so far.
func cpu(t *testing.T, c *redis.Client) time.Duration {
	t.Helper()
	info, err := c.Info(context.Background(), "cpu").Result()
	if err != nil {
		t.Fatal(err)
	}
	var sum float64
	for _, line := range strings.Split(info, "\n") {
		k, v, _ := strings.Cut(strings.TrimSpace(line), ":")
		if k == "used_cpu_user" || k == "used_cpu_sys" {
			f, _ := strconv.ParseFloat(v, 64)
			sum += f
		}
	}
	return time.Duration(sum * float64(time.Second))
}

// lookers are the ways of looking at the app whose cost is measured.
func (s costShop) lookers(t *testing.T) map[string]func() {
	x, err := metrics.New(metrics.Config{CacheFor: time.Nanosecond})
	if err != nil {
		t.Fatal(err)
	}
	in := inspect.New(s.client, "", "shop")
	x.Gather(in, func() []string { return []string{"orders"} })
	x.GatherQueues(in, func() []string { return nil })
	h := metrics.NewHandler(x, nil)
	cli := func(args ...string) func() {
		return func() {
			if r := run(t, nil, "", s.args(args...)...); r.status != 0 {
				t.Fatalf("%s: %+v", args, r)
			}
		}
	}
	return map[string]func(){
		"leat inspect":            cli("inspect"),
		"leat inspect orders":     cli("inspect", "orders"),
		"leat inspect queue jobs": cli("inspect", "queue", "jobs"),
		"/metrics scrape": func() {
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
			if rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), `leat_task_queue_tasks{queue="jobs",state="pending"}`) {
				t.Fatalf("/metrics: %d", rec.Code)
			}
		},
	}
}

// What inspect and a /metrics scrape send Redis does not depend on the
// number of tasks (nor entries): the same commands, as many, with 50 tasks
// as with 1,050; none scans.
func TestLookingCostsNoScan(t *testing.T) {
	t.Parallel()
	s := newCostShop(t, 4, 20, 50)
	first := map[string]cost{}
	for name, op := range s.lookers(t) {
		first[name] = measure(t, s.client, 1, op)
	}
	s.enqueue(t, 1000)
	for name, op := range s.lookers(t) {
		c := measure(t, s.client, 1, op)
		if fmt.Sprint(c.calls) != fmt.Sprint(first[name].calls) {
			t.Errorf("%s: with 1,050 tasks %v, with 50 %v", name, c.calls, first[name].calls)
		}
		for cmd := range c.calls {
			if cmd == "scan" || cmd == "keys" || cmd == "hscan" || cmd == "zscan" || cmd == "sscan" {
				t.Errorf("%s scans: %v", name, c.calls)
			}
		}
		t.Logf("%s: %v", name, c)
	}
}

// TestCostOfLooking measures what one "leat inspect" (overview, one
// stream, one task queue) and one /metrics scrape cost Redis with 256
// partitions and 100,000 tasks, on a private idle server; docs/cli.md's "What
// it costs Redis" shows its figures. LEAT_MEASURE_COST=1 runs it (a minute
// or two of setup):
//
//	LEAT_MEASURE_COST=1 go test -run TestCostOfLooking -v ./cmd/
func TestCostOfLooking(t *testing.T) {
	if os.Getenv("LEAT_MEASURE_COST") == "" {
		t.Skip("set LEAT_MEASURE_COST=1 to measure what inspect and /metrics cost Redis")
	}
	s := newCostShop(t, 256, 2_000, 100_000)
	const runs = 20
	looks := s.lookers(t)
	for _, name := range []string{"leat inspect", "leat inspect orders", "leat inspect queue jobs", "/metrics scrape"} {
		c := measure(t, s.client, runs, looks[name])
		t.Logf("%s (mean of %d): %v", name, runs, c)
	}
}
