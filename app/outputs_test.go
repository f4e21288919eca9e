package app_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/leatdev/leat/app"
	"github.com/leatdev/leat/internal/rdb"
	"github.com/leatdev/leat/internal/tools/redistest"
	"github.com/leatdev/leat/middleware"
	"github.com/leatdev/leat/stream"
	"github.com/redis/go-redis/v9"
	"github.com/vmihailenco/msgpack/v5"
)

// forwardedPartitions is the partition count of the stream "forwarded",
// which the exactly-once output tests write to.
const forwardedPartitions = 3

// declareForwarded declares the stream "forwarded" on a: events re-keyed
// by forwarded.
func declareForwarded(a *app.App) (*stream.Stream[event], error) {
	return stream.Declare[event](a, "forwarded", stream.KeyField("key"), stream.Partitions(forwardedPartitions))
}

// forwarded is e re-keyed: its key moves it to another partition.
func forwarded(e event) event { return event{Key: "fwd-" + e.Key, Seq: e.Seq} }

// forwardedSeen counts the entries of the stream "forwarded" of the app
// shop under prefix, read from Redis, by "KEY/SEQ" of the event forwarded.
func forwardedSeen(t *testing.T, c redis.UniversalClient, prefix string) map[string]int {
	t.Helper()
	ks := rdb.NewKeySpace(prefix, "shop")
	seen := map[string]int{}
	for p := range forwardedPartitions {
		msgs, err := c.XRange(context.Background(), ks.Partition("forwarded", p), "-", "+").Result()
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range msgs {
			var e event
			data, _ := m.Values["data"].(string)
			if err := msgpack.Unmarshal([]byte(data), &e); err != nil {
				t.Fatalf("entry %s of partition %d: %v", m.ID, p, err)
			}
			seen[fmt.Sprintf("%s/%d", e.Key, e.Seq)]++
		}
	}
	return seen
}

// waitForwarded waits until every event of want was forwarded, then
// checks each was forwarded exactly once and nothing else was.
func waitForwarded(t *testing.T, c redis.UniversalClient, prefix string, want []event, within time.Duration) {
	t.Helper()
	var seen map[string]int
	var missing []string
	defer func() {
		if t.Failed() && len(missing) > 0 {
			t.Logf("%d not forwarded, such as %v", len(missing), missing[:min(len(missing), 10)])
		}
	}()
	redistest.Eventually(t, within, fmt.Sprintf("%d events forwarded", len(want)), func() bool {
		seen = forwardedSeen(t, c, prefix)
		missing = missing[:0]
		for _, e := range want {
			if k := fmt.Sprintf("fwd-%s/%d", e.Key, e.Seq); seen[k] == 0 {
				missing = append(missing, k)
			}
		}
		return len(missing) == 0
	})
	checkForwarded(t, seen, want)
}

// checkForwarded fails t unless seen holds every event of want once and
// nothing else.
func checkForwarded(t *testing.T, seen map[string]int, want []event) {
	t.Helper()
	wanted := map[string]bool{}
	for _, e := range want {
		wanted[fmt.Sprintf("fwd-%s/%d", e.Key, e.Seq)] = true
	}
	dups, lost, extra := 0, 0, 0
	for k := range wanted {
		switch n := seen[k]; {
		case n == 0:
			lost++
		case n > 1:
			dups++
			if dups <= 5 {
				t.Errorf("%s forwarded %d times", k, n)
			}
		}
	}
	for k := range seen {
		if !wanted[k] {
			extra++
			if extra <= 5 {
				t.Errorf("%s forwarded, not wanted", k)
			}
		}
	}
	if dups+lost+extra > 0 {
		t.Fatalf("%d events wanted: %d forwarded more than once, %d lost, %d not wanted", len(wanted), dups, lost, extra)
	}
}

// forwardingApp returns an app of env whose processor "p" forwards every
// event of "events" to "forwarded" as an exactly-once output, in batches
// when batches, calling each (if set) after staging an event's output.
func forwardingApp(t *testing.T, env *env, mod func(*app.Config), batches bool, each func(ctx context.Context, e *stream.Event[event]) error, opts ...app.ProcessorOption) (*app.App, *stream.Stream[event]) {
	t.Helper()
	a, s := env.newApp(4, mod)
	return a, forwardOn(t, a, s, batches, each, opts...)
}

// forwardingAppOn is forwardingApp on the client c.
func forwardingAppOn(t *testing.T, env *env, c redis.UniversalClient, batches bool, each func(ctx context.Context, e *stream.Event[event]) error) (*app.App, *stream.Stream[event]) {
	t.Helper()
	a, err := app.New(app.Config{Name: "shop", Client: c, KeyPrefix: env.prefix, Logger: testLogger(), Processing: fastOptions(), LeaderLease: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	s, err := stream.Declare[event](a, "events", stream.KeyField("key"), stream.Partitions(4))
	if err != nil {
		t.Fatal(err)
	}
	return a, forwardOn(t, a, s, batches, each)
}

// forwardOn declares the processor p of forwardingApp on a's stream s.
func forwardOn(t *testing.T, a *app.App, s *stream.Stream[event], batches bool, each func(ctx context.Context, e *stream.Event[event]) error, opts ...app.ProcessorOption) *stream.Stream[event] {
	t.Helper()
	fwd, err := declareForwarded(a)
	if err != nil {
		t.Fatal(err)
	}
	err = app.Process(a, s, "p", func(ctx context.Context, events *stream.Events[event]) error {
		out := fwd.In(events)
		if batches {
			for batch := range events.Batches(16, 5*time.Millisecond) {
				for _, e := range batch {
					if err := out.Send(forwarded(e.Record)); err != nil {
						return err
					}
					if each != nil {
						if err := each(ctx, e); err != nil {
							return err
						}
					}
				}
			}
			return nil
		}
		for e := range events.All() {
			if err := out.SendMessages([]stream.Message[event]{{Record: forwarded(e.Record), Headers: stream.Headers{"from": e.ID}}}); err != nil {
				return err
			}
			if each != nil {
				if err := each(ctx, e); err != nil {
					return err
				}
			}
		}
		return nil
	}, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// Every event is forwarded once, one at a time and in batches, by two
// workers sharing the partitions, one of which leaves part way.
func TestOutputsForwardEachEventOnce(t *testing.T) {
	t.Parallel()
	for _, batches := range []bool{false, true} {
		t.Run(fmt.Sprintf("batches=%v", batches), func(t *testing.T) {
			t.Parallel()
			env := newEnv(t)
			a1, s := forwardingApp(t, env, nil, batches, nil)
			a2, _ := forwardingApp(t, env, nil, batches, nil)
			w1, w2 := startWorker(t, a1), startWorker(t, a2)
			keys := []string{"a", "b", "c", "d", "e", "f"}
			sent := sendEvents(t, s, keys, 30, 0)
			waitForwarded(t, env.client, env.prefix, sent, 30*time.Second)
			if err := w2.stop(t); err != nil {
				t.Fatal(err)
			}
			sent = append(sent, sendEvents(t, s, keys, 30, 100)...)
			waitForwarded(t, env.client, env.prefix, sent, 30*time.Second)
			if err := w1.stop(t); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// A loop body that fails after staging its output has it dropped: retried
// by the runtime, run again by a middleware, or skipped by the Ignore
// policy, each event is forwarded once, or not at all when skipped.
func TestOutputsOfFailedEventsNotWritten(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{"retry", "middleware", "ignore"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			env := newEnv(t)
			opts := []app.ProcessorOption{app.Backoff(time.Millisecond, 5*time.Millisecond)}
			switch mode {
			case "retry":
				opts = append(opts, app.Retries(3))
			case "middleware":
				opts = append(opts, app.Use(middleware.Retry(middleware.RetryOptions{Max: 3, Initial: time.Millisecond})))
			case "ignore":
				opts = append(opts, app.OnError(app.Ignore), app.Retries(1))
			}
			var mu sync.Mutex
			runs := map[string]int{}
			a, s := forwardingApp(t, env, nil, false, func(_ context.Context, e *stream.Event[event]) error {
				mu.Lock()
				id := fmt.Sprintf("%s/%d", e.Record.Key, e.Record.Seq)
				runs[id]++
				r := runs[id]
				mu.Unlock()
				if e.Record.Seq%5 == 0 && (r == 1 || mode == "ignore") {
					return errors.New("failed after staging")
				}
				return nil
			}, opts...)
			startWorker(t, a)
			keys := []string{"a", "b", "c"}
			sent := sendEvents(t, s, keys, 40, 0)
			want := sent
			if mode == "ignore" {
				want = nil
				for _, e := range sent {
					if e.Seq%5 != 0 {
						want = append(want, e)
					}
				}
			}
			// Each key ends with an event that succeeds: once it is
			// forwarded, everything before it was committed or dropped.
			waitForwarded(t, env.client, env.prefix, want, 30*time.Second)
			mu.Lock()
			defer mu.Unlock()
			for _, e := range sent {
				if r := runs[fmt.Sprintf("%s/%d", e.Key, e.Seq)]; e.Seq%5 == 0 && r < 2 {
					t.Errorf("event %s/%d ran %d times, want a failed run and another", e.Key, e.Seq, r)
				}
			}
		})
	}
}

// Exactly-once outputs through stalls and kills: worker processes forward
// each event, while one is stopped (SIGSTOP) past its lock expiry and
// resumed in the middle of its events, and another is SIGKILLed. Events
// are processed at least once (some twice), but each is forwarded exactly
// once: the outputs of an event whose processing did not end in its
// acknowledgement were never written.
func TestOutputsExactlyOnceThroughStallsAndKills(t *testing.T) {
	if testing.Short() {
		t.Skip("crash test")
	}
	t.Parallel()
	env := newEnv(t)
	_, s := env.newApp(4, nil)
	keys := crashKeys(s)
	start := func(id string) *proc {
		return spawn(t, env, id, workerModeEnv+"=1", "LEAT_TEST_REDIS_URL_W="+redistest.URL(t),
			"LEAT_TEST_PARTITIONS=4", "LEAT_TEST_DELAY=2ms", "LEAT_TEST_OUTPUT=1")
	}
	w1, w2 := start("w1"), start("w2")
	begin := time.Now()
	stop := flow(t, s, keys, 0)
	redistest.Eventually(t, 20*time.Second, "both workers processing", func() bool {
		return len(partitionsBy(t, env, "w1", begin)) > 0 && len(partitionsBy(t, env, "w2", begin)) > 0
	})

	w1.signal(t, syscall.SIGSTOP) // mid-event: between staging and its commit, most likely
	stalled := time.Now()
	redistest.Eventually(t, 20*time.Second, "w2 takes over every partition", func() bool {
		return len(partitionsBy(t, env, "w2", stalled)) == 4 && time.Since(stalled) > 3*time.Second
	})
	w1.signal(t, syscall.SIGCONT)
	resumed := time.Now()
	redistest.Eventually(t, 20*time.Second, "w1 rejoins and processes again", func() bool {
		return len(partitionsBy(t, env, "w1", resumed)) > 0
	})

	w2.signal(t, syscall.SIGKILL)
	_ = w2.cmd.Wait()
	killed := time.Now()
	w3 := start("w3")
	redistest.Eventually(t, 20*time.Second, "w3 processes", func() bool {
		return len(partitionsBy(t, env, "w3", killed)) > 0
	})
	sent := stop()
	redistest.Eventually(t, 30*time.Second, "everything processed", func() bool { return uniqueProcessed(t, env) >= len(sent) })
	waitForwarded(t, env.client, env.prefix, sent, 30*time.Second)
	w1.stop(t)
	w3.stop(t)
	checkForwarded(t, forwardedSeen(t, env.client, env.prefix), sent)
	noViolations(t, env)
	t.Logf("%d events sent, %d processings", len(sent), len(processed(t, env)))
}

// A commit sent while the partition was trusted but held up on a frozen
// link until another worker took the partition over is refused by Redis
// when it finally arrives: the stale owner's outputs are not written.
func TestOutputsFencedAfterFrozenLink(t *testing.T) {
	if testing.Short() {
		t.Skip("ownership test")
	}
	t.Parallel()
	env := newEnv(t)
	px := redistest.NewProxy(t, redistest.URL(t))
	opt, err := redis.ParseURL(px.URL())
	if err != nil {
		t.Fatal(err)
	}
	frozenClient := redis.NewClient(opt)
	t.Cleanup(func() { frozenClient.Close() })

	staged, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	_, s := env.newApp(4, nil) // sends on the link that does not freeze
	a1, _ := forwardingApp(t, env, func(c *app.Config) { c.Client = frozenClient }, false, func(context.Context, *stream.Event[event]) error {
		once.Do(func() {
			close(staged)
			<-release // the loop body ends, and the commit goes, once the link froze
		})
		return nil
	})
	startWorker(t, a1)
	first := sendEvents(t, s, []string{"x"}, 1, 0)
	select {
	case <-staged:
	case <-time.After(20 * time.Second):
		t.Fatal("the first worker did not process the event")
	}
	px.Freeze()
	close(release) // its commit waits in the proxy, sent while the lock was trusted
	a2, _ := forwardingApp(t, env, nil, false, nil)
	startWorker(t, a2)
	// The second worker takes the partition once the first one's lock
	// expired, processes the event again and forwards it, then another.
	waitForwarded(t, env.client, env.prefix, first, 20*time.Second)
	all := append(first, sendEvents(t, s, []string{"x"}, 1, 1)...)
	waitForwarded(t, env.client, env.prefix, all, 20*time.Second)
	px.Thaw()
	redistest.Eventually(t, 10*time.Second, "the held commit delivered", func() bool { return px.Held() == 0 })
	// Watch for a while: a later command on another connection proves
	// nothing about the order in which Redis read them.
	deadline := time.Now().Add(500 * time.Millisecond)
	for time.Now().Before(deadline) {
		checkForwarded(t, forwardedSeen(t, env.client, env.prefix), all)
		time.Sleep(20 * time.Millisecond)
	}
}

// On Redis Cluster the outputs go through the source partition's outbox
// and are relayed to their partitions, on other masters: every event is
// forwarded once while a worker stuck in the middle of an event, its
// outputs staged, is stopped and another takes its partitions over (the
// event and those before it not yet committed are processed again there),
// and what a former owner
// left in an outbox is relayed by the next owner when it takes the
// partition.
func TestOutputsCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("cluster test")
	}
	t.Parallel()
	cl := redistest.StartCluster(t, 3)
	c := cl.Client(t)
	prefix := redistest.Prefix(t)
	ks := rdb.NewKeySpace(prefix, "shop")
	ctx := context.Background()

	// A former owner of partition 1 committed two outputs and died before
	// relaying them; the first of them it had relayed already.
	box := ks.Outbox("events", "p", 1)
	var left []event
	for i := range 2 {
		e := event{Key: "left", Seq: i}
		left = append(left, e)
		data, err := msgpack.Marshal(forwarded(e))
		if err != nil {
			t.Fatal(err)
		}
		f := forwarded(e)
		out := rdb.OutboxEntry(box, "forwarded", 0, rdb.OutputEntry{Size: 1000, Fields: []any{"key", f.Key, "codec", "msgpack", "data", data}})
		id, err := c.Do(ctx, append([]any{"XADD", box, "*"}, out.Fields...)...).Text()
		if err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			args := append([]any{"XADD", ks.Partition("forwarded", 0), "*"}, out.Fields[8:]...)
			if err := c.Do(ctx, args...).Err(); err != nil {
				t.Fatal(err)
			}
			if err := c.HSet(ctx, ks.Relayed("forwarded", 0), rdb.OutboxSource("events", "p", 1), id).Err(); err != nil {
				t.Fatal(err)
			}
		}
	}

	var stalled atomic.Bool
	stalledNow := make(chan struct{})
	newWorker := func(stalls bool) (*worker, *stream.Stream[event]) {
		env := &env{t: t, prefix: prefix}
		a, s := forwardingAppOn(t, env, c, false, func(ctx context.Context, e *stream.Event[event]) error {
			if stalls && e.Record.Seq == 20 {
				if stalled.CompareAndSwap(false, true) {
					close(stalledNow)
					<-ctx.Done() // until the worker stops
				}
			}
			return nil
		})
		return startWorker(t, a), s
	}
	w1, s := newWorker(true)
	keys := []string{"a", "b", "c", "d", "e", "f", "g", "h"}
	sent := sendEvents(t, s, keys, 40, 0)
	select {
	case <-stalledNow:
	case <-time.After(30 * time.Second):
		t.Fatal("the worker did not reach the event it stalls in")
	}
	w2, _ := newWorker(false)
	// The stuck worker stops: its processor call is cancelled in the
	// middle of the event, after staging outputs, and the other worker
	// takes every partition over.
	if err := w1.stop(t); err != nil {
		t.Fatal(err)
	}
	want := append(sent, left...)
	waitForwarded(t, c, prefix, want, 60*time.Second)
	if err := w2.stop(t); err != nil {
		t.Fatal(err)
	}
	checkForwarded(t, forwardedSeen(t, c, prefix), want)
	for p := range 4 {
		if n := c.XLen(ctx, ks.Outbox("events", "p", p)).Val(); n != 0 {
			t.Errorf("outbox of partition %d keeps %d entries after relaying", p, n)
		}
	}
}

// TestOutputsExactlyOnceThroughStallsAndKills on Redis Cluster: the worker
// processes run the app on a 3-master cluster, where outputs go through
// the outbox and its relay (the test's records of processing stay on a
// standalone server).
func TestOutputsClusterThroughStallsAndKills(t *testing.T) {
	if testing.Short() {
		t.Skip("crash test")
	}
	t.Parallel()
	env := newEnv(t)
	cl := redistest.StartCluster(t, 3)
	cc := cl.Client(t)
	a, err := app.New(app.Config{Name: "shop", Client: cc, KeyPrefix: env.prefix, Logger: testLogger()})
	if err != nil {
		t.Fatal(err)
	}
	s, err := stream.Declare[event](a, "events", stream.KeyField("key"), stream.Partitions(4))
	if err != nil {
		t.Fatal(err)
	}
	keys := crashKeys(s)
	start := func(id string) *proc {
		return spawn(t, env, id, workerModeEnv+"=1", "LEAT_TEST_REDIS_URL_W="+redistest.URL(t),
			"LEAT_TEST_CLUSTER="+strings.Join(cl.Addrs, ","),
			"LEAT_TEST_PARTITIONS=4", "LEAT_TEST_DELAY=2ms", "LEAT_TEST_OUTPUT=1")
	}
	w1, w2 := start("w1"), start("w2")
	begin := time.Now()
	stop := flow(t, s, keys, 0)
	redistest.Eventually(t, 30*time.Second, "both workers processing", func() bool {
		return len(partitionsBy(t, env, "w1", begin)) > 0 && len(partitionsBy(t, env, "w2", begin)) > 0
	})

	w1.signal(t, syscall.SIGSTOP) // mid-event, or between a commit and its relay
	stalled := time.Now()
	redistest.Eventually(t, 30*time.Second, "w2 takes over every partition", func() bool {
		return len(partitionsBy(t, env, "w2", stalled)) == 4 && time.Since(stalled) > 3*time.Second
	})
	w1.signal(t, syscall.SIGCONT)
	resumed := time.Now()
	redistest.Eventually(t, 30*time.Second, "w1 rejoins and processes again", func() bool {
		return len(partitionsBy(t, env, "w1", resumed)) > 0
	})

	w2.signal(t, syscall.SIGKILL)
	_ = w2.cmd.Wait()
	killed := time.Now()
	w3 := start("w3")
	redistest.Eventually(t, 30*time.Second, "w3 processes", func() bool {
		return len(partitionsBy(t, env, "w3", killed)) > 0
	})
	sent := stop()
	redistest.Eventually(t, 30*time.Second, "everything processed", func() bool { return uniqueProcessed(t, env) >= len(sent) })
	waitForwarded(t, cc, env.prefix, sent, 30*time.Second)
	w1.stop(t)
	w3.stop(t)
	checkForwarded(t, forwardedSeen(t, cc, env.prefix), sent)
	t.Logf("%d events sent, %d processings", len(sent), len(processed(t, env)))
}

// An output on a stream of an app on another connection is refused at
// Send (ErrOutputElsewhere), and nothing is written.
func TestOutputsRefuseAnotherConnection(t *testing.T) {
	t.Parallel()
	env := newEnv(t)
	other := redis.NewClient(env.client.Options())
	t.Cleanup(func() { other.Close() })
	b, _ := env.newApp(4, func(c *app.Config) { c.Client = other })
	elsewhere, err := declareForwarded(b)
	if err != nil {
		t.Fatal(err)
	}
	a, s := env.newApp(4, nil)
	got := make(chan error, 1)
	err = app.Process(a, s, "p", func(ctx context.Context, events *stream.Events[event]) error {
		out := elsewhere.In(events)
		for e := range events.All() {
			select {
			case got <- out.Send(forwarded(e.Record)):
			default:
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	startWorker(t, a)
	sendEvents(t, s, []string{"a"}, 1, 0)
	select {
	case err := <-got:
		if !errors.Is(err, stream.ErrOutputElsewhere) {
			t.Fatalf("Send on another connection's stream: %v, want ErrOutputElsewhere", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the event was not processed")
	}
	if n := len(forwardedSeen(t, env.client, env.prefix)); n != 0 {
		t.Fatalf("%d records written", n)
	}
}
