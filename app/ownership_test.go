package app_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/leatdev/leat/app"
	"github.com/leatdev/leat/executor"
	"github.com/leatdev/leat/internal/tools/redistest"
	"github.com/leatdev/leat/stream"
	"github.com/redis/go-redis/v9"
)

// Worker processes of the ownership tests: the test binary started again
// with ownerModeEnv set runs ownerProcessMain. Its app talks to Redis at
// LEAT_TEST_APP_URL (possibly through a freezable proxy); what it observes
// goes to the "probe" list of the test, over a direct connection.
//
// In blocker mode, an event with key "block" is held by the processor until
// its context ends, and so is the leader-only task, recording when the
// context ended, or, if the process was frozen meanwhile, whether the
// context had ended when it resumed and whether a fenced write went through.
const ownerModeEnv = "LEAT_TEST_OWNER_PROCESS"

func probeKey(prefix string) string  { return prefix + ":test:probe" }
func fencedKey(prefix string) string { return prefix + ":test:fenced" }

const ownerLockExpiry = 2 * time.Second

func ownerProcessMain() int {
	prefix, id := os.Getenv("LEAT_TEST_PREFIX"), os.Getenv("LEAT_TEST_WORKER_ID")
	blocker := os.Getenv("LEAT_TEST_BLOCKER") != ""
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	fail := func(err error) int { fmt.Fprintln(os.Stderr, err); return 2 }
	appOpt, err := redis.ParseURL(os.Getenv("LEAT_TEST_APP_URL"))
	if err != nil {
		return fail(err)
	}
	probeOpt, err := redis.ParseURL(os.Getenv("LEAT_TEST_PROBE_URL"))
	if err != nil {
		return fail(err)
	}
	c, probe := redis.NewClient(appOpt), redis.NewClient(probeOpt)
	defer c.Close()
	defer probe.Close()
	record := func(format string, args ...any) {
		probe.RPush(context.Background(), probeKey(prefix), fmt.Sprintf(format, args...))
	}
	a, err := app.New(app.Config{
		Name: "shop", Client: c, KeyPrefix: prefix, WorkerID: id, Logger: testLogger(),
		Processing:  executor.Options{LockExpiry: ownerLockExpiry, ReadBlock: 200 * time.Millisecond, Grace: 5 * time.Second},
		LeaderLease: ownerLockExpiry,
	})
	if err != nil {
		return fail(err)
	}
	s, err := stream.Declare[event](a, "events", stream.KeyField("key"), stream.Partitions(2))
	if err != nil {
		return fail(err)
	}
	// hold runs until ctx ends, and records how it ended: "cancelled" at
	// a time, or "resumed" after a freeze with what it saw right then.
	// since is taken before the test can see the hold started (and freeze
	// the process), so a freeze at any point after it shows as a gap.
	hold := func(ctx context.Context, what string, since time.Time, write func(context.Context) error) {
		last := since
		for {
			now := time.Now()
			if now.Sub(last) > time.Second { // the process was frozen
				ended := ctx.Err() != nil
				// A processor writes with its own context, which ended with
				// the trust; one writing with another is refused by Redis.
				own, other := write(ctx), write(context.Background())
				record("resumed/%s/%s/%t/%t/%t", what, id, ended, errors.Is(own, stream.ErrNotOwner), errors.Is(other, stream.ErrNotOwner))
				return
			}
			last = now
			if ctx.Err() != nil {
				dl, _ := ctx.Deadline()
				record("cancelled/%s/%s/%d/%d", what, id, time.Now().UnixMilli(), dl.UnixMilli())
				return
			}
			time.Sleep(time.Millisecond) // the work: a write per millisecond until the context ends
		}
	}
	err = app.Process(a, s, "p", func(ctx context.Context, events *stream.Events[event]) error {
		for e := range events.All() {
			if blocker && e.Record.Key == "block" {
				dl, _ := ctx.Deadline()
				since := time.Now()
				record("started/%s/%d/%d/%d", id, e.Partition, events.Token(), time.Until(dl).Milliseconds())
				hold(ctx, "event", since, func(wctx context.Context) error {
					return events.Fenced(wctx, func(pipe redis.Pipeliner) error {
						pipe.RPush(context.Background(), fencedKey(prefix), id)
						return nil
					})
				})
				return ctx.Err()
			}
			record("processed/%s/%s/%d/%d/%d", id, e.Record.Key, e.Partition, events.Token(), time.Now().UnixMilli())
		}
		return nil
	})
	if err != nil {
		return fail(err)
	}
	err = a.Background("lead", func(ctx context.Context) error {
		term, _ := app.LeaderTerm(ctx)
		since := time.Now()
		record("leading/%s/%d/%d", id, term, time.Now().UnixMilli())
		if blocker {
			hold(ctx, "leader", since, func(context.Context) error { return nil })
			return nil
		}
		<-ctx.Done()
		return nil
	}, app.Schedule{LeaderOnly: true})
	if err != nil {
		return fail(err)
	}
	fmt.Println("ready")
	if err := a.Run(ctx); err != nil {
		return fail(err)
	}
	return 0
}

// startOwner starts a worker process of the ownership tests.
func startOwner(t *testing.T, env *env, id, appURL string, blocker bool) *proc {
	t.Helper()
	vars := []string{ownerModeEnv + "=1", "LEAT_TEST_APP_URL=" + appURL, "LEAT_TEST_PROBE_URL=" + redistest.URL(t)}
	if blocker {
		vars = append(vars, "LEAT_TEST_BLOCKER=1")
	}
	return spawn(t, env, id, vars...)
}

// probe returns the records that start with prefix ("kind/"), split at '/'.
func probe(t *testing.T, env *env, prefix string) [][]string {
	t.Helper()
	l, err := env.client.LRange(context.Background(), probeKey(env.prefix), 0, -1).Result()
	if err != nil {
		t.Fatal(err)
	}
	var out [][]string
	for _, r := range l {
		if strings.HasPrefix(r, prefix) {
			out = append(out, strings.Split(r, "/"))
		}
	}
	return out
}

// waitProbe waits until a record starting with prefix exists and returns the
// first one.
func waitProbe(t *testing.T, env *env, d time.Duration, prefix string) []string {
	t.Helper()
	var got [][]string
	redistest.Eventually(t, d, prefix, func() bool { got = probe(t, env, prefix); return len(got) > 0 })
	return got[0]
}

func atoi64(t *testing.T, s string) int64 {
	t.Helper()
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// blockEvent sends the event that the blocker holds, and returns its
// partition.
func blockEvent(t *testing.T, s *stream.Stream[event]) {
	t.Helper()
	if _, err := s.Send(context.Background(), event{Key: "block"}); err != nil {
		t.Fatal(err)
	}
}

// A worker whose network link freezes (sockets open, no traffic) has its
// processor's context, and its leader-only task's, cancelled when trust in
// its lock and lease ends, within the lock expiry of the freeze and before
// another worker can take over, whatever the client's socket timeouts.
func TestFrozenLinkEndsWorkAtTrustEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("process test")
	}
	t.Parallel()
	env := newEnv(t)
	_, s := env.newApp(2, nil)
	px := redistest.NewProxy(t, redistest.URL(t))
	a := startOwner(t, env, "A", px.URL(), true)
	waitProbe(t, env, 10*time.Second, "leading/A/")
	blockEvent(t, s)
	started := waitProbe(t, env, 10*time.Second, "started/A/")
	if dl := atoi64(t, started[4]); dl <= 0 || dl > ownerLockExpiry.Milliseconds() {
		t.Errorf("processor context deadline in %dms, want within the lock expiry", dl)
	}

	px.Freeze()
	frozen := time.Now()
	b := startOwner(t, env, "B", redistest.URL(t), false)
	cancelled := waitProbe(t, env, 10*time.Second, "cancelled/event/A/")
	leadEnd := waitProbe(t, env, 10*time.Second, "cancelled/leader/A/")
	taken := waitProbe(t, env, 10*time.Second, "processed/B/block/")
	leading := waitProbe(t, env, 10*time.Second, "leading/B/")

	for _, c := range []struct {
		what         string
		ended, trust int64 // when the context was seen ended; when trust ended (its deadline)
		successor    int64
	}{
		{"processor", atoi64(t, cancelled[3]), atoi64(t, cancelled[4]), atoi64(t, taken[5])},
		{"leader-only task", atoi64(t, leadEnd[3]), atoi64(t, leadEnd[4]), atoi64(t, leading[3])},
	} {
		trustEnd := time.UnixMilli(c.trust).Sub(frozen)
		seen := time.UnixMilli(c.ended).Sub(time.UnixMilli(c.trust))
		t.Logf("%s: trust ended %s after the freeze, seen ended %s later; successor started %s after the freeze",
			c.what, trustEnd, seen, time.UnixMilli(c.successor).Sub(frozen))
		// Trust ends before the lock can expire: within the lock expiry of
		// the last refresh, so of the freeze.
		if trustEnd > ownerLockExpiry {
			t.Errorf("%s: trust ended %s after the link froze, want within the lock expiry %s", c.what, trustEnd, ownerLockExpiry)
		}
		// The context ends at that moment, not when a refresh attempt
		// stuck on the frozen link gives up (seconds later): allow for
		// scheduling on a loaded machine only.
		if seen > 500*time.Millisecond {
			t.Errorf("%s: context seen ended %s after trust ended", c.what, seen)
		}
		if c.trust >= c.successor {
			t.Errorf("%s: trust ended after the successor started", c.what)
		}
	}
	if tokA, tokB := atoi64(t, started[3]), atoi64(t, taken[4]); tokB <= tokA {
		t.Errorf("fencing token %d of the new owner is not above %d", tokB, tokA)
	}
	if termA, termB := atoi64(t, waitProbe(t, env, time.Second, "leading/A/")[2]), atoi64(t, leading[2]); termB <= termA {
		t.Errorf("leader term %d of the new leader is not above %d", termB, termA)
	}
	px.Thaw()
	b.stop(t)
	a.signal(t, syscall.SIGKILL)
}

// A worker frozen (SIGSTOP) past its lock expiry in the middle of an event,
// and of a leader-only task, finds their contexts ended the moment it
// resumes, before any timer could fire, and its fenced write is refused.
func TestStoppedProcessSeesTrustEndedOnResume(t *testing.T) {
	if testing.Short() {
		t.Skip("process test")
	}
	t.Parallel()
	env := newEnv(t)
	_, s := env.newApp(2, nil)
	a := startOwner(t, env, "A", redistest.URL(t), true)
	waitProbe(t, env, 10*time.Second, "leading/A/")
	blockEvent(t, s)
	waitProbe(t, env, 10*time.Second, "started/A/")

	a.signal(t, syscall.SIGSTOP)
	b := startOwner(t, env, "B", redistest.URL(t), false)
	waitProbe(t, env, 10*time.Second, "processed/B/block/")
	waitProbe(t, env, 10*time.Second, "leading/B/")
	a.signal(t, syscall.SIGCONT)

	ev := waitProbe(t, env, 10*time.Second, "resumed/event/A/")
	if ev[3] != "true" {
		t.Error("processor context not ended when the process resumed past its lock expiry")
	}
	if ev[4] != "true" {
		t.Error("fenced write with the processor's context after resuming not refused with stream.ErrNotOwner")
	}
	if ev[5] != "true" {
		t.Error("fenced write with another context after resuming not refused with stream.ErrNotOwner")
	}
	if ld := waitProbe(t, env, 10*time.Second, "resumed/leader/A/"); ld[3] != "true" {
		t.Error("leader-only task context not ended when the process resumed past its lease")
	}
	if n := env.client.LLen(context.Background(), fencedKey(env.prefix)).Val(); n != 0 {
		t.Errorf("%d fenced writes landed after the lock was lost", n)
	}
	b.stop(t)
	a.stop(t)
}
