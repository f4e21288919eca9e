package app_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/leatdev/leat/app"
	"github.com/leatdev/leat/executor"
	"github.com/leatdev/leat/internal/tools/redistest"
	"github.com/leatdev/leat/stream"
	"github.com/redis/go-redis/v9"
)

// Worker processes for the crash tests: the test binary started again with
// workerModeEnv set runs workerProcessMain instead of the tests.
const workerModeEnv = "LEAT_TEST_WORKER_PROCESS"

// Keys the worker processes write, under the test's prefix.
func processedKey(prefix string) string  { return prefix + ":test:processed" }
func violationsKey(prefix string) string { return prefix + ":test:violations" }
func inflightKey(prefix string, p int) string {
	return prefix + ":test:inflight:" + strconv.Itoa(p)
}
func leadingKey(prefix, id string) string { return prefix + ":test:leading:" + id }

// workerProcessMain runs a worker of the crash tests' app until SIGTERM. Each
// processed event is appended to a list; a per-partition in-flight marker
// detects two executors processing one partition at once.
func workerProcessMain() int {
	url, prefix, id := os.Getenv("LEAT_TEST_REDIS_URL_W"), os.Getenv("LEAT_TEST_PREFIX"), os.Getenv("LEAT_TEST_WORKER_ID")
	parts, _ := strconv.Atoi(os.Getenv("LEAT_TEST_PARTITIONS"))
	delay, _ := time.ParseDuration(os.Getenv("LEAT_TEST_DELAY"))
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	opt, err := redis.ParseURL(url)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	c := redis.NewClient(opt)
	defer c.Close()
	// With LEAT_TEST_CLUSTER (comma-separated addresses) the app runs on
	// that Redis Cluster; the test's own records stay on c.
	var appClient redis.UniversalClient = c
	if addrs := os.Getenv("LEAT_TEST_CLUSTER"); addrs != "" {
		cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: strings.Split(addrs, ",")})
		defer cc.Close()
		appClient = cc
	}
	a, err := app.New(app.Config{
		Name: "shop", Client: appClient, KeyPrefix: prefix, WorkerID: id, Logger: testLogger(),
		Processing:  executor.Options{LockExpiry: 2 * time.Second, ReadBlock: 200 * time.Millisecond, Grace: 2 * time.Second},
		LeaderLease: 2 * time.Second,
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	s, err := stream.Declare[event](a, "events", stream.KeyField("key"), stream.Partitions(parts))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	// With LEAT_TEST_TABLE set, each event also adds one to its key's
	// count in a table, before the delay: a stop or a kill then often
	// lands between the write and its acknowledgement.
	counts, err := stream.DeclareTable[int](s, "p", "counts")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	tables := os.Getenv("LEAT_TEST_TABLE") != ""
	// With LEAT_TEST_OUTPUT set, each event is also forwarded, re-keyed, to
	// the stream "forwarded" as an exactly-once output, before the delay.
	fwd, err := declareForwarded(a)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	outputs := os.Getenv("LEAT_TEST_OUTPUT") != ""
	// With LEAT_TEST_WINDOW set, each event is also counted in its key's
	// windowed table (crashWindows), before the delay.
	var wins *stream.Windowed[agg, event]
	if os.Getenv("LEAT_TEST_WINDOW") != "" {
		if wins, err = crashWindows(a, s); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 2
		}
	}
	err = app.Process(a, s, "p", func(ctx context.Context, events *stream.Events[event]) error {
		st := counts.In(events)
		out := fwd.In(events)
		var ws *stream.WindowStore[agg, event]
		if wins != nil {
			ws = wins.In(events)
		}
		for e := range events.All() {
			if ws != nil {
				if err := addToWindow(ws, e); err != nil {
					return err
				}
			}
			if tables {
				if err := addOne(ctx, st, string(e.Key)); err != nil {
					return err
				}
			}
			if outputs {
				if err := out.Send(forwarded(e.Record)); err != nil {
					return err
				}
			}
			// The marker expires after half the lock expiry, so a worker
			// killed mid-event does not leave it behind for the next owner,
			// which can only start after the lock expired.
			//
			// The guarantee is about owners that still trust their lock: a
			// worker stopped (SIGSTOP) in this loop body and resumed after
			// its successor took over goes on with the body, as any code
			// would, but its ctx has ended (its writes are refused), so it
			// leaves the marker alone, and a marker found taken counts only
			// while ctx still holds.
			bg := context.WithoutCancel(ctx)
			marker := inflightKey(prefix, e.Partition)
			held := false
			if ctx.Err() == nil {
				held = c.SetNX(bg, marker, id, time.Second).Val()
				if !held && ctx.Err() == nil {
					c.RPush(bg, violationsKey(prefix), fmt.Sprintf("partition %d: %s processing while %s is", e.Partition, id, c.Get(bg, marker).Val()))
				}
			}
			if delay > 0 {
				time.Sleep(delay) // work in progress when the process is stopped or killed
			}
			c.RPush(bg, processedKey(prefix), fmt.Sprintf("%s/%d/%s/%d/%d", e.Record.Key, e.Record.Seq, id, e.Partition, time.Now().UnixMilli()))
			if held {
				c.Del(bg, marker)
			}
		}
		return nil
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	err = a.Background("leading", func(ctx context.Context) error {
		return c.Set(ctx, leadingKey(prefix, id), "1", 150*time.Millisecond).Err()
	}, app.Schedule{Every: 50 * time.Millisecond, LeaderOnly: true})
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

// proc is a worker process.
type proc struct {
	id  string
	cmd *exec.Cmd
}

func startProcess(t *testing.T, env *env, id string, partitions int, delay time.Duration) *proc {
	t.Helper()
	return spawn(t, env, id, workerModeEnv+"=1", "LEAT_TEST_REDIS_URL_W="+redistest.URL(t),
		"LEAT_TEST_PARTITIONS="+strconv.Itoa(partitions), "LEAT_TEST_DELAY="+delay.String())
}

// spawn starts the test binary again as worker process id of env, with the
// environment variables env adds (the mode and its settings), and waits for
// its "ready" line. The process is killed (and continued first, if stopped)
// when the test ends.
func spawn(t *testing.T, env *env, id string, vars ...string) *proc {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "LEAT_TEST_PREFIX="+env.prefix, "LEAT_TEST_WORKER_ID="+id)
	cmd.Env = append(cmd.Env, vars...)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &proc{id: id, cmd: cmd}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGCONT)
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	r := bufio.NewReader(out)
	line, err := r.ReadString('\n')
	if err != nil || strings.TrimSpace(line) != "ready" {
		t.Fatalf("worker %s did not start: %q %v", id, line, err)
	}
	go func() { _, _ = r.WriteTo(discard{}) }()
	return p
}

type discard struct{}

func (discard) Write(b []byte) (int, error) { return len(b), nil }

func (p *proc) signal(t *testing.T, s syscall.Signal) {
	t.Helper()
	if err := p.cmd.Process.Signal(s); err != nil {
		t.Fatal(err)
	}
}

// stop ends the process gracefully and checks its exit status.
func (p *proc) stop(t *testing.T) {
	t.Helper()
	p.signal(t, syscall.SIGTERM)
	done := make(chan error, 1)
	go func() { done <- p.cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("worker %s: %v", p.id, err)
		}
	case <-time.After(20 * time.Second):
		t.Fatalf("worker %s did not stop", p.id)
	}
}

// processed returns the processed list: "key/seq/worker/partition/unixms".
func processed(t *testing.T, env *env) []string {
	t.Helper()
	l, err := env.client.LRange(context.Background(), processedKey(env.prefix), 0, -1).Result()
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// checkProcessed checks that every sent event was processed at least once,
// in order per key once duplicates are removed, and returns how many
// entries came from each worker.
func checkProcessed(t *testing.T, env *env, sent []event) map[string]int {
	t.Helper()
	byWorker := map[string]int{}
	seen := map[string]bool{}
	last := map[string]int{}
	for _, line := range processed(t, env) {
		parts := strings.Split(line, "/")
		key, seq, w := parts[0], parts[1], parts[2]
		byWorker[w]++
		if seen[key+"/"+seq] {
			continue
		}
		seen[key+"/"+seq] = true
		n, _ := strconv.Atoi(seq)
		if l, ok := last[key]; ok && n <= l {
			t.Errorf("key %s: %d after %d", key, n, l)
		}
		last[key] = n
	}
	for _, e := range sent {
		if !seen[fmt.Sprintf("%s/%d", e.Key, e.Seq)] {
			t.Errorf("event %s/%d never processed", e.Key, e.Seq)
		}
	}
	return byWorker
}

func uniqueProcessed(t *testing.T, env *env) int {
	seen := map[string]bool{}
	for _, line := range processed(t, env) {
		f := strings.Split(line, "/")
		seen[f[0]+"/"+f[1]] = true
	}
	return len(seen)
}

// resumedAfter returns, for each partition, how long after since worker id
// processed its first event there.
func resumedAfter(t *testing.T, env *env, id string, since time.Time) map[int]time.Duration {
	t.Helper()
	out := map[int]time.Duration{}
	for _, line := range processed(t, env) {
		f := strings.Split(line, "/")
		if f[2] != id {
			continue
		}
		p, _ := strconv.Atoi(f[3])
		ms, _ := strconv.ParseInt(f[4], 10, 64)
		if _, ok := out[p]; !ok {
			out[p] = time.UnixMilli(ms).Sub(since)
		}
	}
	return out
}

func noViolations(t *testing.T, env *env) {
	t.Helper()
	v := env.client.LRange(context.Background(), violationsKey(env.prefix), 0, -1).Val()
	if len(v) > 0 {
		t.Fatalf("two executors processed one partition at once: %v", v)
	}
}

// crashKeys returns 12 keys, 3 on each of the 4 partitions of s.
func crashKeys(s *stream.Stream[event]) []string {
	var ks []string
	per := map[int]int{}
	for i := 0; len(ks) < 12; i++ {
		k := fmt.Sprintf("cust-%d", i)
		if p, _ := s.Partition(event{Key: k}); per[p] < 3 {
			per[p]++
			ks = append(ks, k)
		}
	}
	return ks
}

// Acceptance 6: a SIGKILLed worker's partitions resume on the survivor within
// lock expiry + 2s; nothing is lost and per-key order holds once duplicates
// are removed.
func TestSIGKILL(t *testing.T) {
	if testing.Short() {
		t.Skip("crash test")
	}
	t.Parallel()
	env := newEnv(t)
	_, s := env.newApp(4, nil)
	keys := crashKeys(s)
	w1 := startProcess(t, env, "w1", 4, 5*time.Millisecond)
	sent := sendEvents(t, s, keys, 222/len(keys)+1, 0) // 228 events
	redistest.Eventually(t, 20*time.Second, "w1 processes part of the events", func() bool { return uniqueProcessed(t, env) >= 60 })
	w1.signal(t, syscall.SIGKILL)
	killed := time.Now()
	_ = w1.cmd.Wait()

	w2 := startProcess(t, env, "w2", 4, 0)
	more := sendEvents(t, s, keys, 222/len(keys)+1, 1000)
	all := append(sent, more...)
	redistest.Eventually(t, 30*time.Second, "all 456 events", func() bool { return uniqueProcessed(t, env) >= len(all) })
	w2.stop(t)
	byWorker := checkProcessed(t, env, all)
	if byWorker["w1"] == 0 || byWorker["w2"] == 0 {
		t.Fatalf("processing by worker %v: both should have processed", byWorker)
	}
	// Every partition resumed within lock expiry (2s) + 2s of the kill.
	resumed := resumedAfter(t, env, "w2", killed)
	if len(resumed) != 4 {
		t.Fatalf("w2 processed on partitions %v, want all 4", resumed)
	}
	for p, d := range resumed {
		if d > 4*time.Second {
			t.Errorf("partition %d resumed %s after the kill, want at most lock expiry + 2s = 4s", p, d)
		}
	}
	noViolations(t, env)
}

// flow sends events of keys until stop is called, numbering them from base,
// and returns what it sent.
func flow(t *testing.T, s *stream.Stream[event], keys []string, base int) (stop func() []event) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan []event, 1)
	var once sync.Once
	var sent []event
	stop = func() []event {
		once.Do(func() { cancel(); sent = <-done })
		return sent
	}
	t.Cleanup(func() { stop() })
	go func() {
		var sent []event
		for i := base; ctx.Err() == nil; i++ {
			batch := make([]event, len(keys))
			for j, k := range keys {
				batch[j] = event{Key: k, Seq: i}
			}
			if _, err := s.SendMany(context.Background(), batch); err != nil {
				break // the test reports what is missing
			}
			sent = append(sent, batch...)
			select {
			case <-ctx.Done():
			case <-time.After(20 * time.Millisecond):
			}
		}
		done <- sent
	}()
	return stop
}

// partitionsBy returns the partitions on which worker id processed events
// after since.
func partitionsBy(t *testing.T, env *env, id string, since time.Time) map[int]bool {
	out := map[int]bool{}
	for _, line := range processed(t, env) {
		f := strings.Split(line, "/")
		ms, _ := strconv.ParseInt(f[4], 10, 64)
		if f[2] == id && !time.UnixMilli(ms).Before(since) {
			p, _ := strconv.Atoi(f[3])
			out[p] = true
		}
	}
	return out
}

// Acceptance 7: a worker stalled (SIGSTOP) past its lock expiry while another
// takes over, then resumed (SIGCONT), never processes a partition at the same
// time as the other; it rejoins and nothing is lost.
func TestStallPastLockExpiry(t *testing.T) {
	if testing.Short() {
		t.Skip("crash test")
	}
	t.Parallel()
	env := newEnv(t)
	_, s := env.newApp(4, nil)
	keys := crashKeys(s)
	w1 := startProcess(t, env, "w1", 4, 2*time.Millisecond)
	w2 := startProcess(t, env, "w2", 4, 2*time.Millisecond)
	start := time.Now()
	stop := flow(t, s, keys, 0)
	redistest.Eventually(t, 20*time.Second, "both workers processing", func() bool {
		return len(partitionsBy(t, env, "w1", start)) > 0 && len(partitionsBy(t, env, "w2", start)) > 0
	})
	settled := time.Now()
	redistest.Eventually(t, 20*time.Second, "two partitions each", func() bool {
		return len(partitionsBy(t, env, "w1", settled)) == 2 && len(partitionsBy(t, env, "w2", settled)) == 2
	})
	sent := stop()
	redistest.Eventually(t, 20*time.Second, "the first flow processed", func() bool { return uniqueProcessed(t, env) >= len(sent) })

	w1.signal(t, syscall.SIGSTOP)
	stalled := time.Now()
	stop = flow(t, s, keys, 100000)
	redistest.Eventually(t, 20*time.Second, "w2 takes over every partition", func() bool {
		return len(partitionsBy(t, env, "w2", stalled)) == 4 && time.Since(stalled) > 3*time.Second
	})
	w1.signal(t, syscall.SIGCONT)
	resumed := time.Now()
	redistest.Eventually(t, 20*time.Second, "w1 rejoins and processes again", func() bool {
		return len(partitionsBy(t, env, "w1", resumed)) > 0
	})
	sent = append(sent, stop()...)
	redistest.Eventually(t, 20*time.Second, "everything processed", func() bool { return uniqueProcessed(t, env) >= len(sent) })
	w1.stop(t)
	w2.stop(t)
	noViolations(t, env)
	checkProcessed(t, env, sent)
}

// leaders returns the workers whose leader-only task ran in the last 150ms.
func leaders(t *testing.T, env *env, ids ...string) []string {
	var out []string
	for _, id := range ids {
		if env.client.Exists(context.Background(), leadingKey(env.prefix, id)).Val() == 1 {
			out = append(out, id)
		}
	}
	return out
}

// Acceptance 8: with 3 workers exactly one is leader; kill it and another
// becomes leader within the lease.
func TestLeaderFailover(t *testing.T) {
	if testing.Short() {
		t.Skip("crash test")
	}
	t.Parallel()
	env := newEnv(t)
	env.newApp(4, nil)
	ids := []string{"w1", "w2", "w3"}
	procs := map[string]*proc{}
	for _, id := range ids {
		procs[id] = startProcess(t, env, id, 4, 0)
	}
	redistest.Eventually(t, 10*time.Second, "a leader", func() bool { return len(leaders(t, env, ids...)) == 1 })
	for range 40 { // 2s: never two leaders
		if l := leaders(t, env, ids...); len(l) > 1 {
			t.Fatalf("leaders %v", l)
		}
		time.Sleep(50 * time.Millisecond)
	}
	old := leaders(t, env, ids...)
	if len(old) != 1 {
		t.Fatalf("leaders %v", old)
	}
	procs[old[0]].signal(t, syscall.SIGKILL)
	killed := time.Now()
	var next []string
	redistest.Eventually(t, 5*time.Second, "a new leader", func() bool {
		next = leaders(t, env, ids...)
		return len(next) == 1 && next[0] != old[0]
	})
	// The lease is 2s: a new leader within the lease plus one campaign round
	// (lease/10) and the task's period.
	if d := time.Since(killed); d > 2*time.Second+200*time.Millisecond+100*time.Millisecond {
		t.Fatalf("new leader %s after the kill, lease is 2s", d)
	}
	for _, id := range ids {
		if id != old[0] {
			procs[id].stop(t)
		}
	}
}
