package app_test

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/leatdev/leat/app"
	"github.com/leatdev/leat/internal/tools/redistest"
	"github.com/redis/go-redis/v9"
)

// Worker processes of the background failover tests: the test binary
// started again with bgModeEnv set ("once" or "tick") runs bgProcessMain.
// Its leader-only tasks write what they do under P:test:bg:..., and block
// until their context ends (or the process dies) when the test sets the
// block key.
const bgModeEnv = "LEAT_TEST_BG_PROCESS"

// bgLease is the leader lease of the background failover tests.
const bgLease = 2 * time.Second // tolerates the scheduling stalls of a loaded 2-core machine

// bgEvery is the interval of the tick test's task.
const bgEvery = 100 * time.Millisecond

func bgKey(prefix, name string) string { return prefix + ":test:bg:" + name }

func bgProcessMain() int {
	mode, prefix, id := os.Getenv(bgModeEnv), os.Getenv("LEAT_TEST_PREFIX"), os.Getenv("LEAT_TEST_WORKER_ID")
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	fail := func(err error) int { fmt.Fprintln(os.Stderr, err); return 2 }
	opt, err := redis.ParseURL(os.Getenv("LEAT_TEST_REDIS_URL_W"))
	if err != nil {
		return fail(err)
	}
	c := redis.NewClient(opt)
	defer c.Close()
	a, err := app.New(app.Config{Name: "shop", Client: c, KeyPrefix: prefix, WorkerID: id, Logger: testLogger(), LeaderLease: bgLease})
	if err != nil {
		return fail(err)
	}
	bg := context.Background()
	now := func() int64 { return time.Now().UnixMilli() }
	// wait waits d or until ctx ends, and reports whether ctx is still live.
	wait := func(ctx context.Context, d time.Duration) bool {
		select {
		case <-ctx.Done():
			return false
		case <-time.After(d):
			return true
		}
	}
	// The leader beats: tests see who leads, and for how long.
	err = a.Background("beat", func(ctx context.Context) error {
		return c.Incr(ctx, bgKey(prefix, "beats:"+id)).Err()
	}, app.Schedule{Every: 20 * time.Millisecond, LeaderOnly: true})
	if err != nil {
		return fail(err)
	}
	switch mode {
	case "once":
		err = a.Background("init", func(ctx context.Context) error {
			c.Incr(bg, bgKey(prefix, "starts"))
			c.RPush(bg, bgKey(prefix, "runs"), fmt.Sprintf("start/%s/%d", id, now()))
			if c.Get(bg, bgKey(prefix, "block")).Val() == "1" {
				c.RPush(bg, bgKey(prefix, "runs"), fmt.Sprintf("blocked/%s/%d", id, now()))
				<-ctx.Done()
				return ctx.Err()
			}
			if !wait(ctx, 50*time.Millisecond) {
				return ctx.Err()
			}
			// One transaction: the test never sees the count without the record.
			_, err := c.TxPipelined(bg, func(p redis.Pipeliner) error {
				p.Incr(bg, bgKey(prefix, "completions"))
				p.RPush(bg, bgKey(prefix, "runs"), fmt.Sprintf("done/%s/%d", id, now()))
				return nil
			})
			return err
		}, app.Schedule{LeaderOnly: true})
	case "tick":
		err = a.Background("tick", func(ctx context.Context) error {
			at, _ := app.ScheduledTime(ctx)
			tick := at.UnixMicro()
			c.RPush(bg, bgKey(prefix, "runs"), fmt.Sprintf("start/%d/%s/%d", tick, id, now()))
			if c.Get(bg, bgKey(prefix, "block")).Val() == "1" && c.SetNX(bg, bgKey(prefix, "blocked"), id, 0).Val() {
				c.RPush(bg, bgKey(prefix, "runs"), fmt.Sprintf("blocked/%d/%s/%d", tick, id, now()))
				<-ctx.Done()
				return ctx.Err()
			}
			if !wait(ctx, 10*time.Millisecond) {
				return ctx.Err()
			}
			c.RPush(bg, bgKey(prefix, "runs"), fmt.Sprintf("done/%d/%s/%d", tick, id, now()))
			return nil
		}, app.Schedule{Every: bgEvery, LeaderOnly: true})
	default:
		err = fmt.Errorf("unknown mode %q", mode)
	}
	if err != nil {
		return fail(err)
	}
	fmt.Println("ready")
	if err := a.Run(ctx); err != nil {
		return fail(err)
	}
	return 0
}

func startBgProcess(t *testing.T, env *env, mode, id string) *proc {
	t.Helper()
	return spawn(t, env, id, bgModeEnv+"="+mode, "LEAT_TEST_REDIS_URL_W="+redistest.URL(t))
}

// bgRuns returns the runs list of the test, each split at '/'.
func bgRuns(t *testing.T, env *env, kind string) [][]string {
	t.Helper()
	l, err := env.client.LRange(context.Background(), bgKey(env.prefix, "runs"), 0, -1).Result()
	if err != nil {
		t.Fatal(err)
	}
	var out [][]string
	for _, r := range l {
		if f := strings.Split(r, "/"); f[0] == kind {
			out = append(out, f)
		}
	}
	return out
}

func bgCount(t *testing.T, env *env, name string) int64 {
	t.Helper()
	n, err := env.client.Get(context.Background(), bgKey(env.prefix, name)).Int64()
	if err != nil && err != redis.Nil {
		t.Fatal(err)
	}
	return n
}

// startBgWorkers starts three worker processes and returns them by ID, and
// when the first was ready.
func startBgWorkers(t *testing.T, env *env, mode string) (map[string]*proc, time.Time) {
	procs := map[string]*proc{}
	var ready time.Time
	for i, id := range []string{"w1", "w2", "w3"} {
		procs[id] = startBgProcess(t, env, mode, id)
		if i == 0 {
			ready = time.Now()
		}
	}
	return procs, ready
}

// beatsOfOthers waits until a worker other than dead led for n beats, and
// returns it.
func beatsOfOthers(t *testing.T, env *env, dead string, n int64) string {
	t.Helper()
	var leader string
	redistest.Eventually(t, 10*time.Second, "a new leader", func() bool {
		for _, id := range []string{"w1", "w2", "w3"} {
			if id != dead && bgCount(t, env, "beats:"+id) >= n {
				leader = id
				return true
			}
		}
		return false
	})
	return leader
}

func stopAll(t *testing.T, procs map[string]*proc, dead string) {
	for id, p := range procs {
		if id != dead {
			p.stop(t)
		}
	}
}

// A leader-only task run once runs exactly once with three workers, within
// a second of start, and a new leader does not run it again once it has
// completed.
func TestLeaderOnceRunsOnce(t *testing.T) {
	if testing.Short() {
		t.Skip("crash test")
	}
	t.Parallel()
	env := newEnv(t)
	procs, ready := startBgWorkers(t, env, "once")
	redistest.Eventually(t, 5*time.Second, "the task completes", func() bool { return bgCount(t, env, "completions") == 1 })
	starts := bgRuns(t, env, "start")
	if len(starts) != 1 {
		t.Fatalf("runs %v, want one", starts)
	}
	if at := time.UnixMilli(atoi64(t, starts[0][2])); at.Sub(ready) > time.Second {
		t.Fatalf("the task started %s after the first worker, want within 1s", at.Sub(ready))
	}
	leader := starts[0][1]
	procs[leader].signal(t, syscall.SIGKILL)
	_ = procs[leader].cmd.Wait()
	// The new leader's term has begun and beaten 10 times (200ms): its
	// task run once has long decided whether to run.
	beatsOfOthers(t, env, leader, 10)
	if n, c := bgCount(t, env, "starts"), bgCount(t, env, "completions"); n != 1 || c != 1 {
		t.Fatalf("after the failover: %d starts, %d completions; want 1 and 1", n, c)
	}
	rec := env.client.HGetAll(context.Background(), env.prefix+":bg:{shop}:init").Val()
	if rec["done"] == "" || rec["term"] != rec["done"] {
		t.Fatalf("record %v, want the term that completed it", rec)
	}
	if ttl := env.client.PTTL(context.Background(), env.prefix+":bg:{shop}:init").Val(); ttl <= 0 || ttl > 3*bgLease {
		t.Fatalf("record TTL %s, want at most 3 leases", ttl)
	}
	stopAll(t, procs, leader)
}

// A leader-only task run once whose leader is killed mid-run runs to
// completion on the next leader, exactly once.
func TestLeaderOnceKilledMidRun(t *testing.T) {
	if testing.Short() {
		t.Skip("crash test")
	}
	t.Parallel()
	env := newEnv(t)
	env.client.Set(context.Background(), bgKey(env.prefix, "block"), "1", 0)
	procs, ready := startBgWorkers(t, env, "once")
	blocked := waitProbeRuns(t, env, "blocked")
	if at := time.UnixMilli(atoi64(t, blocked[2])); at.Sub(ready) > time.Second {
		t.Fatalf("the task started %s after the first worker, want within 1s", at.Sub(ready))
	}
	env.client.Del(context.Background(), bgKey(env.prefix, "block"))
	leader := blocked[1]
	procs[leader].signal(t, syscall.SIGKILL)
	killed := time.Now()
	_ = procs[leader].cmd.Wait()
	redistest.Eventually(t, 10*time.Second, "the task completes on the next leader", func() bool { return bgCount(t, env, "completions") == 1 })
	done := bgRuns(t, env, "done")
	if len(done) != 1 || done[0][1] == leader {
		t.Fatalf("completed runs %v, want one, not by the killed %s", done, leader)
	}
	starts := bgRuns(t, env, "start")
	if len(starts) != 2 {
		t.Fatalf("runs %v, want the killed one and one more", starts)
	}
	if d := time.UnixMilli(atoi64(t, starts[1][2])).Sub(killed); d > bgLease+bgLease/10+300*time.Millisecond {
		t.Fatalf("the next leader ran the task %s after the kill; the lease is %s", d, bgLease)
	}
	beatsOfOthers(t, env, leader, bgCount(t, env, "beats:"+done[0][1])+10)
	if n, c := bgCount(t, env, "starts"), bgCount(t, env, "completions"); n != 2 || c != 1 {
		t.Fatalf("later: %d starts, %d completions; want 2 and 1", n, c)
	}
	stopAll(t, procs, leader)
}

// waitProbeRuns waits for a run record of kind and returns the first.
func waitProbeRuns(t *testing.T, env *env, kind string) []string {
	t.Helper()
	var got [][]string
	redistest.Eventually(t, 10*time.Second, kind, func() bool { got = bgRuns(t, env, kind); return len(got) > 0 })
	return got[0]
}

// A leader-only interval task keeps its ticks across a SIGKILLed leader:
// every tick before the kill and after the takeover ran once, on one grid;
// the tick cut by the kill was not completed and none ran twice; the ticks
// due during the failover gap were run by one run as soon as the new leader
// took over, within the lease arithmetic.
func TestLeaderTicksAcrossFailover(t *testing.T) {
	if testing.Short() {
		t.Skip("crash test")
	}
	t.Parallel()
	env := newEnv(t)
	ctx := context.Background()
	procs, _ := startBgWorkers(t, env, "tick")
	redistest.Eventually(t, 10*time.Second, "8 ticks", func() bool { return len(bgRuns(t, env, "done")) >= 8 })
	env.client.Set(ctx, bgKey(env.prefix, "block"), "1", 0)
	blocked := waitProbeRuns(t, env, "blocked")
	leader, cut := blocked[2], atoi64(t, blocked[1])
	procs[leader].signal(t, syscall.SIGKILL)
	killed := time.Now()
	_ = procs[leader].cmd.Wait()
	env.client.Del(ctx, bgKey(env.prefix, "block"))
	after := func() int {
		n := 0
		for _, r := range bgRuns(t, env, "done") {
			if atoi64(t, r[1]) > cut {
				n++
			}
		}
		return n
	}
	redistest.Eventually(t, 10*time.Second, "8 ticks on the next leader", func() bool { return after() >= 8 })
	starts, dones := bgRuns(t, env, "start"), bgRuns(t, env, "done")
	stopAll(t, procs, leader)

	every := bgEvery.Microseconds()
	startsOf, doneOf := map[int64]int{}, map[int64][]string{}
	var first, last int64 = -1, 0
	for _, r := range starts {
		tick := atoi64(t, r[1])
		startsOf[tick]++
		if first < 0 || tick < first {
			first = tick
		}
		last = max(last, tick)
	}
	for _, r := range dones {
		tick := atoi64(t, r[1])
		if doneOf[tick] != nil {
			t.Errorf("tick %d completed twice: %v and %v", tick, doneOf[tick], r)
		}
		doneOf[tick] = r
	}
	for tick, n := range startsOf {
		if (tick-first)%every != 0 {
			t.Errorf("tick %d is off the grid of %d every %dµs", tick, first, every)
		}
		if n > 1 {
			t.Errorf("tick %d started %d times", tick, n)
		}
	}
	if doneOf[cut] != nil {
		t.Fatalf("the tick cut by the kill completed: %v", doneOf[cut])
	}
	// Every tick before the cut one completed, on the killed leader or
	// before it led.
	for tick := first; tick < cut; tick += every {
		if doneOf[tick] == nil {
			t.Errorf("tick %d (%dms before the cut one) missing", tick, (cut-tick)/1000)
		}
	}
	// The first tick after the cut one: the latest due when the next
	// leader took over, run at once; then every tick, to the last
	// (which may still have been running).
	resumed := int64(-1)
	for tick := range startsOf {
		if tick > cut && (resumed < 0 || tick < resumed) {
			resumed = tick
		}
	}
	// A tick is skipped only after another cut: a leader that lost its
	// lease in the middle of a run (under load, the test's own failover is
	// not always the only one), whose successor runs the latest tick due
	// at once; every other tick runs.
	var later []int64
	for tick := range startsOf {
		if tick >= resumed {
			later = append(later, tick)
		}
	}
	slices.Sort(later)
	for i, tick := range later {
		cutHere := doneOf[tick] == nil && tick != last
		if cutHere {
			t.Logf("tick %d cut too (another leader change)", tick)
		}
		if i+1 < len(later) && later[i+1]-tick > every && !cutHere {
			t.Errorf("ticks after %d (%dms after the resumed one) missing", tick, (tick-resumed)/1000)
		}
	}
	r := doneOf[resumed]
	if r == nil || r[2] == leader {
		t.Fatalf("resumed tick %d: %v", resumed, r)
	}
	// Lease arithmetic: the killed leader refreshed at the latest when it
	// was killed; its lease expired a lease later; the next leader took it
	// within lease/10 more, and ran the latest tick due at once.
	cutAt := time.UnixMicro(cut)
	bound := killed.Sub(cutAt) + bgLease + bgLease/10 + 100*time.Millisecond // + Redis and scheduling
	if gap := time.UnixMicro(resumed).Sub(cutAt); gap > bound {
		t.Errorf("ticks resumed %s after the cut one, want at most %s", gap, bound)
	}
	for _, s := range starts {
		if atoi64(t, s[1]) == resumed {
			if late := time.UnixMilli(atoi64(t, s[3])).Sub(time.UnixMicro(resumed)); late > bgEvery+50*time.Millisecond {
				t.Errorf("the resumed tick started %s after it was due, want at once on taking over", late)
			}
		}
	}
	t.Logf("cut tick %s, resumed %s later, %d ticks in all", cutAt.Format("15:04:05.000"), time.UnixMicro(resumed).Sub(cutAt), len(startsOf))
}
