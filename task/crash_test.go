package task_test

import (
	"bufio"
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
	"github.com/leatdev/leat/internal/rdb"
	"github.com/leatdev/leat/internal/tools/redistest"
	"github.com/leatdev/leat/task"
	"github.com/redis/go-redis/v9"
)

// Worker processes for the crash tests: the test binary started again with
// workerModeEnv set runs workerProcessMain instead of the tests.
const workerModeEnv = "LEAT_TEST_TASK_WORKER"

// runsKey is the hash the worker processes count runs in: field = task
// payload number, value = runs.
func runsKey(prefix string) string { return prefix + ":test:runs" }

// procVisibility is the visibility timeout of the worker processes' queue.
const procVisibility = 2 * time.Second

func workerProcessMain() int {
	url, prefix, id := os.Getenv("LEAT_TEST_REDIS_URL_W"), os.Getenv("LEAT_TEST_PREFIX"), os.Getenv("LEAT_TEST_WORKER_ID")
	delay, _ := time.ParseDuration(os.Getenv("LEAT_TEST_DELAY"))
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	opt, err := redis.ParseURL(url)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	opt.PoolSize = 40
	c := redis.NewClient(opt)
	defer c.Close()
	a, err := app.New(app.Config{Name: "shop", Client: c, KeyPrefix: prefix, WorkerID: id, Logger: testLogger(), LeaderLease: time.Second})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	_, err = task.Handle(a, "load", func(ctx context.Context, t *task.Task[job]) (out, error) {
		if delay > 0 {
			time.Sleep(delay) // work in progress when the process is stopped or killed
		}
		err := c.HIncrBy(context.WithoutCancel(ctx), runsKey(prefix), strconv.Itoa(t.Payload.N), 1).Err()
		return out{Double: 2 * t.Payload.N}, err
	}, task.Concurrency(10), task.Visibility(procVisibility), task.Timeout(5*time.Second))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	fmt.Println("ready")
	if err := a.Run(ctx); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

type proc struct{ cmd *exec.Cmd }

func startProcess(t *testing.T, e *env, id string, delay time.Duration) *proc {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), workerModeEnv+"=1", "LEAT_TEST_REDIS_URL_W="+redistest.URL(t),
		"LEAT_TEST_PREFIX="+e.prefix, "LEAT_TEST_WORKER_ID="+id, "LEAT_TEST_DELAY="+delay.String())
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(15 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	})
	r := bufio.NewReader(out)
	line, err := r.ReadString('\n')
	if err != nil || strings.TrimSpace(line) != "ready" {
		t.Fatalf("worker %s did not start: %q %v", id, line, err)
	}
	go func() { _, _ = r.WriteTo(discard{}) }()
	return &proc{cmd: cmd}
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }

// loadSize is the number of tasks of the process tests: 10,000, or 100,000
// with LEAT_TEST_LONG=1.
func loadSize() int {
	if os.Getenv("LEAT_TEST_LONG") != "" {
		return 100_000
	}
	return 10_000
}

// loadQueue declares the worker processes' queue for enqueueing.
func loadQueue(t *testing.T, e *env) *task.Queue[job, out] {
	q, err := task.Declare[job, out](e.app("producer"), "load", task.Visibility(procVisibility), task.Timeout(5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	return q
}

func enqueueLoad(t *testing.T, q *task.Queue[job, out], n int) {
	ps := make([]job, n)
	for i := range ps {
		ps[i] = job{N: i}
	}
	if _, err := q.EnqueueMany(ctxT(t), ps); err != nil {
		t.Fatal(err)
	}
}

// runCounts reads the runs of every task and returns the duplicates.
func runCounts(t *testing.T, e *env, n int) (dups int) {
	m, err := e.client.HGetAll(ctxT(t), runsKey(e.prefix)).Result()
	if err != nil {
		t.Fatal(err)
	}
	if len(m) != n {
		t.Fatalf("%d tasks ran, want %d", len(m), n)
	}
	for k, v := range m {
		r, _ := strconv.Atoi(v)
		if r < 1 {
			t.Fatalf("task %s ran %d times", k, r)
		}
		dups += r - 1
	}
	return dups
}

// TestProcessesExactlyOnce: 10,000 tasks (100,000 with LEAT_TEST_LONG=1)
// over 3 worker processes at concurrency 10 each all succeed exactly once.
func TestProcessesExactlyOnce(t *testing.T) {
	e := newEnv(t)
	n := loadSize()
	q := loadQueue(t, e)
	for i := range 3 {
		startProcess(t, e, fmt.Sprintf("p%d", i), 0)
	}
	start := time.Now()
	enqueueLoad(t, q, n)
	redistest.Eventually(t, 5*time.Minute, "every task succeeded", func() bool {
		c, _ := q.Counts(context.Background())
		return c[task.Succeeded] == int64(n)
	})
	el := time.Since(start)
	if d := runCounts(t, e, n); d != 0 {
		t.Fatalf("%d duplicate runs without a crash", d)
	}
	t.Logf("%d tasks over 3 processes in %s: %.0f tasks/s, no duplicates", n, el, float64(n)/el.Seconds())
}

// TestProcessesKilled: as above with one worker SIGKILLed mid-run: every
// task still succeeds at least once; the tasks it held are reclaimed within
// the visibility timeout plus a few seconds; the duplicates are counted.
func TestProcessesKilled(t *testing.T) {
	e := newEnv(t)
	n := loadSize()
	q := loadQueue(t, e)
	var procs []*proc
	for i := range 3 {
		procs = append(procs, startProcess(t, e, fmt.Sprintf("p%d", i), time.Millisecond))
	}
	enqueueLoad(t, q, n)
	redistest.Eventually(t, time.Minute, "a third of the tasks done", func() bool {
		c, _ := q.Counts(context.Background())
		return c[task.Succeeded] >= int64(n/3)
	})
	killed := time.Now()
	if err := procs[0].cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	// The tasks the killed worker held: its pending entries.
	ctx := ctxT(t)
	stream := rdb.NewKeySpace(e.prefix, "shop").TaskStream("load", 0)
	pend, err := e.client.XPendingExt(ctx, &redis.XPendingExtArgs{Stream: stream, Group: "workers", Consumer: "p0", Start: "-", End: "+", Count: 1000}).Result()
	if err != nil {
		t.Fatal(err)
	}
	var held []string
	for _, p := range pend {
		if ms, err := e.client.XRange(ctx, stream, p.ID, p.ID).Result(); err == nil && len(ms) == 1 {
			held = append(held, ms[0].Values["t"].(string))
		}
	}
	// Reclaimed after the visibility timeout, within half of it more (the
	// leader's reclaim period) and a leader's failover (the killed worker
	// may have led): a few seconds at most. They then wait behind the tasks
	// ready before them, like any ready task, so when they finish depends on
	// the backlog.
	redistest.Eventually(t, time.Minute, "the killed worker's tasks reclaimed", func() bool {
		for _, id := range held {
			in, err := q.Info(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			if in.State == task.Active && in.Worker == "p0" {
				return false
			}
		}
		return true
	})
	reclaimed := time.Since(killed)
	if bound := procVisibility + procVisibility/2 + 3*time.Second; reclaimed > bound {
		t.Errorf("the killed worker's tasks were reclaimed %s after the kill, over %s", reclaimed, bound)
	}
	redistest.Eventually(t, 5*time.Minute, "every task succeeded", func() bool {
		c, _ := q.Counts(context.Background())
		return c[task.Succeeded] == int64(n)
	})
	all := time.Since(killed)
	dups := runCounts(t, e, n)
	var last time.Duration
	for _, id := range held {
		in, err := q.Info(ctx, id)
		if err != nil || in.State != task.Succeeded {
			t.Fatalf("held task %s: %+v %v", id, in, err)
		}
		last = max(last, in.FinishedAt.Sub(killed))
	}
	c, _ := q.Counts(context.Background())
	if c[task.Active] != 0 || c[task.Pending] != 0 {
		t.Fatalf("counts %v", c)
	}
	t.Logf("SIGKILL of 1 of 3 workers with %d tasks: it held %d; they were reclaimed %s after the kill (visibility %s) and finished within %s; %d duplicate runs; all done %s after the kill",
		n, len(held), reclaimed.Round(time.Millisecond), procVisibility, last.Round(time.Millisecond), dups, all.Round(time.Millisecond))
}
