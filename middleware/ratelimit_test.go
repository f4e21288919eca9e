package middleware_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/leatdev/leat/app"
	"github.com/leatdev/leat/internal/tools/redistest"
	"github.com/leatdev/leat/middleware"
	"github.com/leatdev/leat/stream"
	"github.com/redis/go-redis/v9"
)

const rateWorkerEnv = "LEAT_MW_RATE_WORKER" // "URL PREFIX RATE"

// rateWorkerMain is a worker process of TestRateLimitAcrossProcesses: it
// processes events at the shared rate, counting them per process in Redis,
// until SIGTERM.
func rateWorkerMain() int {
	args := strings.Fields(os.Getenv(rateWorkerEnv))
	rate, _ := strconv.ParseFloat(args[2], 64)
	opt, err := redis.ParseURL(args[0])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	c := redis.NewClient(opt)
	defer c.Close()
	a, err := app.New(app.Config{Name: "shop", Client: c, KeyPrefix: args[1], Logger: testLogger()})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	s, err := stream.Declare[event](a, "events", stream.KeyField("key"), stream.Partitions(12))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	me := strconv.Itoa(os.Getpid())
	err = app.Process(a, s, "p", func(ctx context.Context, events *stream.Events[event]) error {
		for range events.All() {
			c.HIncrBy(ctx, args[1]+":test:done", me, 1)
		}
		return nil
	}, app.StartFrom(app.Earliest), app.Use(middleware.RateLimit(middleware.RateOptions{PerSecond: rate})))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	if err := a.Run(ctx); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// Three worker processes share one limit: together they process at the
// limit, not three times it.
func TestRateLimitAcrossProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("starts worker processes")
	}
	const rate = 60.0
	e := newEnv(t)
	_, s := e.newApp(12, nil)
	var sent []event
	for i := range 1500 {
		sent = append(sent, event{Key: "k" + strconv.Itoa(i%48), Seq: i})
	}
	send(t, s, sent...)
	for range 3 {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%s %s %g", rateWorkerEnv, redistest.URL(t), e.prefix, rate))
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			_ = cmd.Process.Signal(syscall.SIGTERM)
			_ = cmd.Wait()
		})
	}
	ctx := context.Background()
	total := func() (int64, int) {
		m, err := e.client.HGetAll(ctx, e.prefix+":test:done").Result()
		if err != nil {
			t.Fatal(err)
		}
		var n int64
		for _, v := range m {
			x, _ := strconv.ParseInt(v, 10, 64)
			n += x
		}
		return n, len(m)
	}
	// Measure once all three are processing.
	redistest.Eventually(t, 10*time.Second, "three workers processing", func() bool {
		_, workers := total()
		return workers == 3
	})
	n0, _ := total()
	t0 := time.Now()
	window := 6 * time.Second
	redistest.Eventually(t, 2*window, "the measuring window", func() bool { return time.Since(t0) >= window })
	n1, _ := total()
	measured := float64(n1-n0) / time.Since(t0).Seconds()
	fmt.Printf("rate limit %.0f/s across 3 worker processes: measured %.1f/s (%d events in %s)\n",
		rate, measured, n1-n0, time.Since(t0).Round(time.Millisecond))
	if measured < rate*0.9 || measured > rate*1.1 {
		t.Fatalf("measured %.1f/s, want %.0f/s ± 10%%", measured, rate)
	}
}
