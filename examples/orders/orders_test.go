package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
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
	"github.com/leatdev/leat/cmd"
	"github.com/leatdev/leat/internal/rdb"
	"github.com/leatdev/leat/internal/tools/redistest"
	"github.com/leatdev/leat/stream"
	"github.com/redis/go-redis/v9"
)

func TestMain(m *testing.M) {
	if os.Getenv(stallWorkerEnv) != "" {
		os.Exit(stallWorkerMain())
	}
	redistest.Main(m)
}

// env is the app "shop" of one test under its own key prefix.
type env struct {
	client *redis.Client
	keys   rdb.KeySpace
	global []string
	totals *totals
}

func newEnv(t *testing.T) *env {
	c, prefix := redistest.Client(t)
	a, err := app.New(app.Config{Name: "shop", Client: c, KeyPrefix: prefix})
	if err != nil {
		t.Fatal(err)
	}
	return &env{client: c, keys: rdb.NewKeySpace(prefix, "shop"), global: []string{"--redis", redistest.URL(t), "--prefix", prefix, "--app", "shop"}, totals: newTotals(a)}
}

type result struct {
	status         int
	stdout, stderr string
}

// cli runs the orders binary's CLI with args after the global flags.
func (e *env) cli(ctx context.Context, stdin string, args ...string) result {
	var stdout, stderr bytes.Buffer
	argv := append(append([]string{"orders"}, e.global...), args...)
	status := cmd.Run(ctx, setup, argv, strings.NewReader(stdin), &stdout, &stderr)
	return result{status, stdout.String(), stderr.String()}
}

// worker runs "orders worker" until stop is called, which returns its result.
func (e *env) worker(t *testing.T) (stop func() result) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan result, 1)
	go func() {
		done <- e.cli(ctx, "", "--log-level", "info", "worker", "--read-block", "200ms", "--grace", "2s", "--lock-expiry", "2s")
	}()
	var r *result
	stop = func() result {
		if r == nil {
			cancel()
			select {
			case got := <-done:
				r = &got
			case <-time.After(30 * time.Second):
				t.Fatal("worker did not stop within 30s")
			}
		}
		return *r
	}
	t.Cleanup(func() { stop() })
	return stop
}

// waitTotals polls until the customers' totals (cents) are want.
func (e *env) waitTotals(t *testing.T, want map[string]int64) {
	t.Helper()
	ctx := context.Background()
	got := map[string]int64{}
	redistest.Eventually(t, 20*time.Second, fmt.Sprintf("totals %v", want), func() bool {
		for c := range want {
			n, err := e.totals.total(ctx, c)
			if err != nil {
				t.Fatal(err)
			}
			got[c] = n
		}
		return fmt.Sprint(got) == fmt.Sprint(want)
	})
}

func TestOrders(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	stop := e.worker(t)

	if r := e.cli(ctx, "", "send", "orders", `{"id":1,"customer":"c-42","amount":12.5}`); r.status != 0 {
		t.Fatalf("send: %+v", r)
	}
	var lines strings.Builder
	want := map[string]int64{"c-42": 1250}
	for i := range 200 {
		c := fmt.Sprintf("c-%d", i%7)
		fmt.Fprintf(&lines, `{"id":%d,"customer":%q,"amount":%d.%02d}`+"\n", i+2, c, i, i%100)
		want[c] += int64(i*100 + i%100)
	}
	if r := e.cli(ctx, lines.String(), "sendmany", "orders", "-"); r.status != 0 || !strings.HasPrefix(r.stdout, "sent 200 events to orders") {
		t.Fatalf("sendmany: %+v", r)
	}
	e.waitTotals(t, want)

	top, err := e.totals.top(ctx, 3)
	if err != nil {
		t.Fatal(err)
	}
	if len(top) != 3 || !strings.HasPrefix(top[0], "c-") {
		t.Errorf("top %q", top)
	}

	r := stop()
	if r.status != 0 {
		t.Fatalf("worker: %+v", r)
	}
	// The leader ran the background task when it started.
	if !strings.Contains(r.stderr, `msg="top customers"`) {
		t.Errorf("worker logs do not show the top customers:\n%s", r.stderr)
	}

	// Processing every order again (a reset, or redeliveries after a crash)
	// leaves the totals as they are. Reset refuses while the worker counts
	// as alive: wait until its membership is gone (a heartbeat during the
	// shutdown can record it once more, until the lock expiry).
	e.waitNoMembers(t, ctx)
	if r := e.cli(ctx, "", "reset", "--yes", "--start", "earliest", "totals"); r.status != 0 ||
		!strings.Contains(r.stdout, "reset processor orders/totals on 16 partitions to earliest") {
		t.Fatalf("reset: %+v", r)
	}
	stop = e.worker(t)
	e.waitProcessed(t, ctx)
	if r := stop(); r.status != 0 {
		t.Fatalf("worker: %+v", r)
	}
	e.waitTotals(t, want)
}

// waitNoMembers polls until processor "totals" has no live executor.
func (e *env) waitNoMembers(t *testing.T, ctx context.Context) {
	t.Helper()
	redistest.Eventually(t, 20*time.Second, "the stopped worker's membership to end", func() bool {
		now, err := e.client.Time(ctx).Result()
		if err != nil {
			t.Fatal(err)
		}
		n, err := e.client.ZCount(ctx, e.keys.Members("orders", "totals"), strconv.FormatInt(now.UnixMilli(), 10), "+inf").Result()
		if err != nil {
			t.Fatal(err)
		}
		return n == 0
	})
}

// waitProcessed polls until processor "totals" delivered and acknowledged
// every entry of every partition of "orders".
func (e *env) waitProcessed(t *testing.T, ctx context.Context) {
	t.Helper()
	redistest.Eventually(t, 20*time.Second, "every order processed again", func() bool {
		done := true
		for p := range 16 {
			key := e.keys.Partition("orders", p)
			last, err := e.client.XRevRangeN(ctx, key, "+", "-", 1).Result()
			if err != nil {
				t.Fatal(err)
			}
			if len(last) == 0 {
				continue
			}
			groups, err := e.client.XInfoGroups(ctx, key).Result()
			if err != nil {
				t.Fatal(err)
			}
			for _, g := range groups {
				if g.Name == "totals" && (g.LastDeliveredID != last[0].ID || g.Pending > 0) {
					done = false
				}
			}
		}
		return done
	})
}

func TestAddIdempotent(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	for _, step := range []struct {
		id    string
		cents int64
		added int64
	}{
		{"5-0", 100, 1},
		{"5-0", 100, 0}, // redelivered
		{"4-9", 100, 0}, // older
		{"5-1", 250, 1},
		{"10-0", 5, 1}, // numeric, not string, order
	} {
		n, err := addScript.Run(ctx, e.client, e.totals.keys, "c-1", step.id, step.cents).Int64()
		if err != nil || n != step.added {
			t.Errorf("add %s: %d, %v; want %d", step.id, n, err, step.added)
		}
	}
	if n, err := e.totals.total(ctx, "c-1"); n != 355 || err != nil {
		t.Errorf("total %d, %v; want 355", n, err)
	}
	if got := money(-1205); got != "-12.05" {
		t.Errorf("money(-1205) = %q", got)
	}
}

// The stall test's worker process: the orders CLI whose processor announces
// order stallID on stdout and pauses briefly before writing it, so the test
// can freeze the process (SIGSTOP) in the middle of the event.
const (
	stallWorkerEnv = "ORDERS_TEST_STALL_WORKER"
	stallID        = 1000
)

func stallWorkerMain() int {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	setup := func(cfg app.Config) (*app.App, error) {
		a, err := app.New(cfg)
		if err != nil {
			return nil, err
		}
		t := newTotals(a)
		t.beforeWrite = func(o Order) {
			if o.ID == stallID {
				fmt.Printf("stalling %d\n", o.ID)
				time.Sleep(500 * time.Millisecond)
			}
		}
		t.afterWrite = func(o Order, err error) {
			if o.ID == stallID {
				fmt.Printf("wrote %d refused=%t\n", o.ID, errors.Is(err, stream.ErrNotOwner))
			}
		}
		return a, declareWith(a, t)
	}
	return cmd.Run(ctx, setup, append([]string{"orders"}, os.Args[1:]...), os.Stdin, os.Stdout, os.Stderr)
}

// A worker frozen past its lock expiry in the middle of an order, and
// resumed after another worker took its partitions over, cannot write that
// order again: its fenced write is refused and the totals stay exact.
func TestTotalsExactAfterAStall(t *testing.T) {
	if testing.Short() {
		t.Skip("process test")
	}
	t.Parallel()
	e := newEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	flags := []string{"worker", "--read-block", "200ms", "--grace", "2s", "--lock-expiry", "2s"}
	w1 := exec.Command(os.Args[0], append(append([]string{}, e.global...), flags...)...)
	w1.Env = append(os.Environ(), stallWorkerEnv+"=1")
	var logs bytes.Buffer // read once the process has exited
	w1.Stderr = &logs
	out, err := w1.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := w1.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = w1.Process.Signal(syscall.SIGCONT)
		_ = w1.Process.Kill()
		_ = w1.Wait()
		if t.Failed() {
			t.Logf("stalled worker's logs:\n%s", logs.String())
		}
	})
	lines := make(chan string, 100)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	waitLine := func(prefix string) string {
		t.Helper()
		for {
			select {
			case l, ok := <-lines:
				if !ok {
					t.Fatalf("worker exited before printing %q", prefix)
				}
				if strings.HasPrefix(l, prefix) {
					return l
				}
			case <-time.After(20 * time.Second):
				t.Fatalf("worker did not print %q", prefix)
			}
		}
	}

	var in strings.Builder
	want := map[string]int64{}
	order := func(id int, c string, cents int64) {
		fmt.Fprintf(&in, `{"id":%d,"customer":%q,"amount":%d.%02d}`+"\n", id, c, cents/100, cents%100)
		want[c] += cents
	}
	for i := range 40 {
		order(i+1, fmt.Sprintf("c-%d", i%4), int64(100+i))
	}
	order(stallID, "c-9", 5000)
	for i := range 40 {
		order(stallID+1+i, fmt.Sprintf("c-%d", 5+i%5), int64(200+i))
	}
	if r := e.cli(ctx, in.String(), "sendmany", "orders", "-"); r.status != 0 {
		t.Fatalf("sendmany: %+v", r)
	}
	waitLine(fmt.Sprintf("stalling %d", stallID))
	if err := w1.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	stop := e.worker(t) // takes the partitions over once the frozen worker's locks expire
	e.waitTotals(t, want)
	if err := w1.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	if l := waitLine(fmt.Sprintf("wrote %d", stallID)); l != fmt.Sprintf("wrote %d refused=true", stallID) {
		t.Fatalf("the resumed worker's write: %q, want it refused", l)
	}
	if r := stop(); r.status != 0 {
		t.Fatalf("worker: %+v", r)
	}
	_ = w1.Process.Signal(syscall.SIGTERM)
	if err := w1.Wait(); err != nil {
		t.Fatalf("stalled worker: %v", err)
	}
	e.waitTotals(t, want)
}
