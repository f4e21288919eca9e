package app_test

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
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

// agg is the windowed value of the window tests: how many events a window
// got and the sum of their Seq.
type agg struct {
	Count int `msgpack:"count"`
	Sum   int `msgpack:"sum"`
}

// windowParts is the partition count of the stream "windows" the tests
// emit to.
const windowParts = 2

// seqTime is the event time of the window tests: Seq seconds after the
// epoch.
func seqTime(e event) time.Time { return time.UnixMilli(int64(e.Seq) * 1000) }

type windowRig struct {
	a    *app.App
	s    *stream.Stream[event]
	w    *stream.Windowed[agg, event]
	late *stream.Stream[event]
}

// windowApp returns an app of env whose processor "win" adds each event
// of "events" to the windowed table "agg" (kind, opts), emitting to
// "windows" and sending late events to "late", calling each (if set)
// after an event's Update.
func windowApp(t *testing.T, env *env, mod func(*app.Config), kind stream.WindowKind, opts []stream.WindowOption,
	each func(ctx context.Context, e *stream.Event[event]) error, popts ...app.ProcessorOption) *windowRig {
	t.Helper()
	a, s := env.newApp(4, mod)
	out, err := stream.Declare[stream.WindowRecord[agg]](a, "windows", stream.KeyField("key"), stream.Partitions(windowParts))
	if err != nil {
		t.Fatal(err)
	}
	late, err := stream.Declare[event](a, "late", stream.KeyField("key"), stream.Partitions(1))
	if err != nil {
		t.Fatal(err)
	}
	opts = append([]stream.WindowOption{stream.EventTime(seqTime), stream.EmitTo(out), stream.LateTo(late),
		stream.MergeWith(func(a, b agg) agg { return agg{a.Count + b.Count, a.Sum + b.Sum} })}, opts...)
	w, err := stream.DeclareWindowed[agg](s, "win", "agg", kind, opts...)
	if err != nil {
		t.Fatal(err)
	}
	err = app.Process(a, s, "win", func(ctx context.Context, events *stream.Events[event]) error {
		ws := w.In(events)
		for e := range events.All() {
			if _, err := ws.Update(e, func(old agg, _ bool) agg { return agg{old.Count + 1, old.Sum + e.Record.Seq} }); err != nil {
				return err
			}
			if each != nil {
				if err := each(ctx, e); err != nil {
					return err
				}
			}
		}
		return nil
	}, popts...)
	if err != nil {
		t.Fatal(err)
	}
	return &windowRig{a: a, s: s, w: w, late: late}
}

// emitted reads the records of the stream "windows", by "KEY/START/END"
// (seconds), with how many times each was emitted.
func emitted(t *testing.T, c redis.UniversalClient, prefix string) (map[string]agg, map[string]int) {
	t.Helper()
	ks := rdb.NewKeySpace(prefix, "shop")
	values, times := map[string]agg{}, map[string]int{}
	for p := range windowParts {
		msgs, err := c.XRange(context.Background(), ks.Partition("windows", p), "-", "+").Result()
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range msgs {
			var r stream.WindowRecord[agg]
			data, _ := m.Values["data"].(string)
			if err := msgpack.Unmarshal([]byte(data), &r); err != nil {
				t.Fatalf("entry %s: %v", m.ID, err)
			}
			id := fmt.Sprintf("%s/%d/%d", r.Key, r.Start/1000, r.End/1000)
			values[id] = r.Value
			times[id]++
		}
	}
	return values, times
}

// waitEmitted waits until every window of want was emitted, then checks
// each was emitted once with its value, and nothing else was.
func waitEmitted(t *testing.T, c redis.UniversalClient, prefix string, want map[string]agg, within time.Duration) {
	t.Helper()
	var got map[string]agg
	var times map[string]int
	redistest.Eventually(t, within, fmt.Sprintf("%d windows emitted", len(want)), func() bool {
		got, times = emitted(t, c, prefix)
		for id := range want {
			if times[id] == 0 {
				return false
			}
		}
		return true
	})
	var bad []string
	for id, v := range want {
		if times[id] != 1 || got[id] != v {
			bad = append(bad, fmt.Sprintf("%s: emitted %d times, last %+v, want once %+v", id, times[id], got[id], v))
		}
	}
	for id := range times {
		if _, ok := want[id]; !ok {
			bad = append(bad, fmt.Sprintf("%s emitted (%+v), not wanted", id, got[id]))
		}
	}
	sort.Strings(bad)
	for i, b := range bad {
		if i < 10 {
			t.Error(b)
		}
	}
	if len(bad) > 0 {
		t.FailNow()
	}
}

// fixedWindows is what tumbling or hopping windows of size and advance
// (seconds) hold of events, for the windows that end at or before until.
func fixedWindows(events []event, size, advance, until int) map[string]agg {
	want := map[string]agg{}
	for _, e := range events {
		for start := (e.Seq / advance) * advance; start > e.Seq-size; start -= advance {
			if start+size > until {
				continue
			}
			id := fmt.Sprintf("%s/%d/%d", e.Key, start, start+size)
			a := want[id]
			want[id] = agg{a.Count + 1, a.Sum + e.Seq}
		}
	}
	return want
}

// closeAll sends, for each key, an event at seq: every partition's event
// time moves there.
func closeAll(t *testing.T, s *stream.Stream[event], keys []string, seq int) []event {
	return sendEvents(t, s, keys, 1, seq)
}

var windowKeys = []string{"home", "about", "cart", "checkout", "search", "help"}

// Events with their time in the record are counted per minute, exactly,
// and each minute is emitted once when the partition's event time passes
// it; the minute still open is read with Get and Windows.
func TestWindowTumblingCountsPerMinute(t *testing.T) {
	t.Parallel()
	env := newEnv(t)
	rig := windowApp(t, env, nil, stream.Tumbling(time.Minute), nil, nil)
	startWorker(t, rig.a)
	sent := sendEvents(t, rig.s, windowKeys, 300, 0) // 5 minutes, one event a second per key
	sent = append(sent, closeAll(t, rig.s, windowKeys, 330)...)
	want := fixedWindows(sent, 60, 60, 330)
	if len(want) != 5*len(windowKeys) {
		t.Fatalf("%d windows expected, want %d", len(want), 5*len(windowKeys))
	}
	for id, v := range want {
		if v.Count != 60 {
			t.Fatalf("window %s holds %d events, want 60", id, v.Count)
		}
	}
	waitEmitted(t, env.client, env.prefix, want, 30*time.Second)
	ctx := context.Background()
	v, ok, err := rig.w.Get(ctx, "cart", time.UnixMilli(300_000))
	if err != nil || !ok || v != (agg{1, 330}) {
		t.Fatalf("open window of cart: %+v %v %v, want {1 330}", v, ok, err)
	}
	ws, err := rig.w.Windows(ctx, "cart")
	if err != nil {
		t.Fatal(err)
	}
	if len(ws) != 1 || ws[0].Closed || !ws[0].Start.Equal(time.UnixMilli(300_000)) || !ws[0].End.Equal(time.UnixMilli(360_000)) {
		t.Fatalf("windows of cart: %+v, want only the open one [300s, 360s)", ws)
	}
	if _, ok, _ := rig.w.Get(ctx, "cart", time.UnixMilli(0)); ok {
		t.Fatal("closed window of cart kept past its retention (the grace)")
	}
}

// A hopping window of 60s every 20s gets every event of its 60s: each
// event lands in three windows.
func TestWindowHoppingEventInEachWindow(t *testing.T) {
	t.Parallel()
	env := newEnv(t)
	rig := windowApp(t, env, nil, stream.Hopping(time.Minute, 20*time.Second), nil, nil)
	startWorker(t, rig.a)
	keys := windowKeys[:3]
	sent := sendEvents(t, rig.s, keys, 200, 0)
	sent = append(sent, closeAll(t, rig.s, keys, 400)...)
	want := fixedWindows(sent, 60, 20, 400)
	waitEmitted(t, env.client, env.prefix, want, 30*time.Second)
	// every event but the last of a key is in three emitted windows
	values, _ := emitted(t, env.client, env.prefix)
	placed := map[string]int{}
	for id, v := range values {
		var key string
		var start, end int
		if _, err := fmt.Sscanf(strings.ReplaceAll(id, "/", " "), "%s %d %d", &key, &start, &end); err != nil {
			t.Fatal(err)
		}
		if end-start != 60 || start%20 != 0 {
			t.Fatalf("window %s is not one of 60s starting every 20s", id)
		}
		placed[key] += v.Count
	}
	for _, k := range keys {
		if placed[k] != 3*200 {
			t.Fatalf("key %s: %d events in its emitted windows, want 3 per event (600)", k, placed[k])
		}
	}
}

// Session windows: events less than the gap apart form a session, a gap
// splits them, and an event bridging two sessions merges them.
func TestWindowSessionsMergeAndSplit(t *testing.T) {
	t.Parallel()
	env := newEnv(t)
	rig := windowApp(t, env, nil, stream.Session(10*time.Second), []stream.WindowOption{stream.Grace(10 * time.Second)}, nil)
	startWorker(t, rig.a)
	ctx := context.Background()
	send := func(seqs ...int) {
		for _, q := range seqs {
			if _, err := rig.s.Send(ctx, event{Key: "u1", Seq: q}); err != nil {
				t.Fatal(err)
			}
		}
	}
	// {0, 5} and {20}, 10s gap: two sessions; 12 bridges them: [0, 30).
	send(0, 5, 20)
	redistest.Eventually(t, 10*time.Second, "two sessions", func() bool {
		ws, err := rig.w.Windows(ctx, "u1")
		return err == nil && len(ws) == 2 && ws[0].Value == agg{2, 5} && ws[1].Value == agg{1, 20} &&
			ws[0].End.Equal(time.UnixMilli(15_000))
	})
	send(12)
	redistest.Eventually(t, 10*time.Second, "sessions merged", func() bool {
		ws, err := rig.w.Windows(ctx, "u1")
		return err == nil && len(ws) == 1 && ws[0].Value == agg{4, 37} &&
			ws[0].Start.Equal(time.UnixMilli(0)) && ws[0].End.Equal(time.UnixMilli(30_000))
	})
	// 45 is past the gap: a new session, which 100 closes; 2000 closes 100's.
	send(45, 100, 2000)
	waitEmitted(t, env.client, env.prefix, map[string]agg{"u1/0/30": {4, 37}, "u1/45/55": {1, 45}, "u1/100/110": {1, 100}}, 20*time.Second)
}

func partitionOf(t *testing.T, s *stream.Stream[event], key string) int {
	p, err := s.Partition(event{Key: key})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// An event later than its window's close is late: not added, counted,
// and sent to the side stream; an event within the grace is added.
func TestWindowLateEventsDroppedAndCounted(t *testing.T) {
	t.Parallel()
	env := newEnv(t)
	rig := windowApp(t, env, nil, stream.Tumbling(time.Minute), []stream.WindowOption{stream.Grace(5 * time.Second)}, nil)
	startWorker(t, rig.a)
	ctx := context.Background()
	sent := sendEvents(t, rig.s, []string{"a"}, 60, 0) // [0, 60)
	sent = append(sent, sendEvents(t, rig.s, []string{"a"}, 1, 64)...)
	sendEvents(t, rig.s, []string{"a"}, 1, 30) // on time: 64 < 60 + 5
	sent = append(sent, event{Key: "a", Seq: 30})
	sent = append(sent, sendEvents(t, rig.s, []string{"a"}, 1, 70)...) // closes [0, 60)
	sendEvents(t, rig.s, []string{"a"}, 1, 10)                         // late
	sendEvents(t, rig.s, []string{"a"}, 1, 59)                         // late
	sent = append(sent, sendEvents(t, rig.s, []string{"a"}, 1, 200)...)
	waitEmitted(t, env.client, env.prefix, fixedWindows(sent, 60, 60, 195), 20*time.Second)
	n, err := rig.w.Late(ctx)
	if err != nil || n != 2 {
		t.Fatalf("late count %d (%v), want 2", n, err)
	}
	msgs, err := env.client.XRange(ctx, rdb.NewKeySpace(env.prefix, "shop").Partition("late", 0), "-", "+").Result()
	if err != nil {
		t.Fatal(err)
	}
	var seqs []int
	for _, m := range msgs {
		var e event
		data, _ := m.Values["data"].(string)
		if err := msgpack.Unmarshal([]byte(data), &e); err != nil {
			t.Fatal(err)
		}
		seqs = append(seqs, e.Seq)
	}
	if fmt.Sprint(seqs) != "[10 59]" {
		t.Fatalf("late stream holds %v, want [10 59]", seqs)
	}
}

// Closed windows are kept for their retention, then deleted by the
// processor's commits as event time moves past it.
func TestWindowRetentionDeletesOldWindows(t *testing.T) {
	t.Parallel()
	env := newEnv(t)
	rig := windowApp(t, env, nil, stream.Tumbling(time.Minute), []stream.WindowOption{stream.WindowRetention(3 * time.Minute)}, nil)
	startWorker(t, rig.a)
	ctx := context.Background()
	sent := sendEvents(t, rig.s, []string{"k"}, 1, 10)
	sent = append(sent, sendEvents(t, rig.s, []string{"k"}, 1, 70)...)
	sent = append(sent, sendEvents(t, rig.s, []string{"k"}, 1, 130)...)
	waitEmitted(t, env.client, env.prefix, fixedWindows(sent, 60, 60, 130), 20*time.Second)
	ws, err := rig.w.Windows(ctx, "k")
	if err != nil {
		t.Fatal(err)
	}
	if len(ws) != 3 || !ws[0].Closed || !ws[1].Closed || ws[2].Closed {
		t.Fatalf("windows %+v, want two closed and one open", ws)
	}
	// event time 250: [0, 60) ends 60 + 180 = 240 <= 250 and goes; [60, 120) stays until 300
	sendEvents(t, rig.s, []string{"k"}, 1, 250)
	redistest.Eventually(t, 10*time.Second, "[0, 60) deleted", func() bool {
		_, ok, err := rig.w.Get(ctx, "k", time.UnixMilli(0))
		return err == nil && !ok
	})
	if v, ok, err := rig.w.Get(ctx, "k", time.UnixMilli(60_000)); err != nil || !ok || v != (agg{1, 70}) {
		t.Fatalf("[60, 120): %+v %v %v, want kept with {1 70}", v, ok, err)
	}
	if ts, err := rig.w.EventTimeOf(ctx, partitionOf(t, rig.s, "k")); err != nil || !ts.Equal(time.UnixMilli(250_000)) {
		t.Fatalf("event time %v (%v), want 250s", ts, err)
	}
}

// Loop bodies that fail after their Update (retried by the runtime or a
// middleware, or skipped by the Ignore policy) have their window writes
// and emissions dropped: every window is emitted once with the exact sum
// of the events acknowledged in it. A failed event that closed windows
// (seq 70, 140, ...: multiples of 7 and of the window) leaves them to be
// closed again, by its retry or, when it is skipped, by the next event.
func TestWindowEmitsOnceThroughFailures(t *testing.T) {
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
			rig := windowApp(t, env, nil, stream.Tumbling(10*time.Second), nil, func(_ context.Context, e *stream.Event[event]) error {
				mu.Lock()
				defer mu.Unlock()
				id := fmt.Sprintf("%s/%d", e.Record.Key, e.Record.Seq)
				runs[id]++
				if e.Record.Seq%7 == 0 && (runs[id] == 1 || mode == "ignore") {
					return errors.New("failed after the update")
				}
				return nil
			}, opts...)
			startWorker(t, rig.a)
			sent := sendEvents(t, rig.s, windowKeys, 100, 0)
			sent = append(sent, closeAll(t, rig.s, windowKeys, 1002)...)
			kept := sent
			if mode == "ignore" {
				kept = nil
				for _, e := range sent {
					if e.Seq%7 != 0 {
						kept = append(kept, e)
					}
				}
			}
			waitEmitted(t, env.client, env.prefix, fixedWindows(kept, 10, 10, 1002), 30*time.Second)
		})
	}
}

// A worker whose loop body is held after the Update of the event that
// closes windows, until it loses the partition (its worker is stopped, or
// its link freezes past the lock expiry), wrote nothing: the next owner
// processes the event again and emits each window once.
func TestWindowEmitsOnceWhenOwnerStopsOrFreezes(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{"stop", "freeze"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			env := newEnv(t)
			client := env.client
			var px *redistest.Proxy
			if mode == "freeze" {
				px = redistest.NewProxy(t, redistest.URL(t))
				opt, err := redis.ParseURL(px.URL())
				if err != nil {
					t.Fatal(err)
				}
				client = redis.NewClient(opt)
				t.Cleanup(func() { client.Close() })
			}
			held, release := make(chan struct{}), make(chan struct{})
			var once sync.Once
			rig1 := windowApp(t, env, func(c *app.Config) { c.Client = client }, stream.Tumbling(10*time.Second), nil,
				func(ctx context.Context, e *stream.Event[event]) error {
					if e.Record.Seq != 1000 {
						return nil
					}
					once.Do(func() { close(held) })
					select {
					case <-release:
					case <-ctx.Done():
					}
					return ctx.Err()
				})
			w1 := startWorker(t, rig1.a)
			sent := sendEvents(t, rig1.s, []string{"x"}, 100, 0)
			sent = append(sent, closeAll(t, rig1.s, []string{"x"}, 1000)...)
			select {
			case <-held:
			case <-time.After(20 * time.Second):
				t.Fatal("the first worker did not reach the closing event")
			}
			if _, times := emitted(t, env.client, env.prefix); times["x/90/100"] != 0 {
				t.Fatal("the last window emitted before the event closing it was acknowledged")
			}
			if mode == "stop" {
				go w1.stop(t)
			} else {
				px.Freeze()
				close(release) // the commit goes on the frozen link
			}
			rig2 := windowApp(t, env, nil, stream.Tumbling(10*time.Second), nil, nil)
			startWorker(t, rig2.a)
			want := fixedWindows(sent, 10, 10, 1000)
			waitEmitted(t, env.client, env.prefix, want, 30*time.Second)
			if px != nil {
				px.Thaw()
				redistest.Eventually(t, 10*time.Second, "the held commit delivered", func() bool { return px.Held() == 0 })
			}
			deadline := time.Now().Add(500 * time.Millisecond)
			for time.Now().Before(deadline) {
				_, times := emitted(t, env.client, env.prefix)
				for id, n := range times {
					if n != 1 {
						t.Fatalf("%s emitted %d times", id, n)
					}
				}
				time.Sleep(20 * time.Millisecond)
			}
			if mode == "freeze" {
				return
			}
			w1.stop(t)
		})
	}
}

// crashWindowSize is the window of the crash tests' windowed table, in
// seqs (seconds of event time).
const crashWindowSize = 20

// crashWindows declares the windowed table of the crash tests' worker
// processes: tumbling windows of crashWindowSize seqs, emitted to
// "windows".
func crashWindows(a *app.App, s *stream.Stream[event]) (*stream.Windowed[agg, event], error) {
	out, err := stream.Declare[stream.WindowRecord[agg]](a, "windows", stream.KeyField("key"), stream.Partitions(windowParts))
	if err != nil {
		return nil, err
	}
	return stream.DeclareWindowed[agg](s, "p", "agg", stream.Tumbling(crashWindowSize*time.Second),
		stream.EventTime(seqTime), stream.EmitTo(out))
}

func addToWindow(ws *stream.WindowStore[agg, event], e *stream.Event[event]) error {
	_, err := ws.Update(e, func(old agg, _ bool) agg { return agg{old.Count + 1, old.Sum + e.Record.Seq} })
	return err
}

// Windows through stalls and kills: worker processes count events in
// tumbling windows while one is stopped (SIGSTOP) past its lock expiry and
// resumed, and another is SIGKILLed mid-event. Events are processed at
// least once, but every window is emitted once, with the exact count and
// sum of its events.
func TestWindowEmitsOnceThroughStallsAndKills(t *testing.T) {
	if testing.Short() {
		t.Skip("crash test")
	}
	t.Parallel()
	windowsThroughStallsAndKills(t, false)
}

// TestWindowEmitsOnceThroughStallsAndKills on a 3-master Redis Cluster,
// where the emitted windows go through the partition's outbox and its
// relay.
func TestWindowClusterThroughStallsAndKills(t *testing.T) {
	if testing.Short() {
		t.Skip("crash test")
	}
	t.Parallel()
	windowsThroughStallsAndKills(t, true)
}

func windowsThroughStallsAndKills(t *testing.T, cluster bool) {
	env := newEnv(t)
	var client redis.UniversalClient = env.client
	extra := []string{}
	if cluster {
		cl := redistest.StartCluster(t, 3)
		client = cl.Client(t)
		extra = append(extra, "LEAT_TEST_CLUSTER="+strings.Join(cl.Addrs, ","))
	}
	a, err := app.New(app.Config{Name: "shop", Client: client, KeyPrefix: env.prefix, Logger: testLogger()})
	if err != nil {
		t.Fatal(err)
	}
	s, err := stream.Declare[event](a, "events", stream.KeyField("key"), stream.Partitions(4))
	if err != nil {
		t.Fatal(err)
	}
	keys := crashKeys(s)
	start := func(id string) *proc {
		return spawn(t, env, id, append([]string{workerModeEnv + "=1", "LEAT_TEST_REDIS_URL_W=" + redistest.URL(t),
			"LEAT_TEST_PARTITIONS=4", "LEAT_TEST_DELAY=2ms", "LEAT_TEST_WINDOW=1"}, extra...)...)
	}
	w1, w2 := start("w1"), start("w2")
	begin := time.Now()
	stop := flow(t, s, keys, 0)
	redistest.Eventually(t, 20*time.Second, "both workers processing", func() bool {
		return len(partitionsBy(t, env, "w1", begin)) > 0 && len(partitionsBy(t, env, "w2", begin)) > 0
	})
	w1.signal(t, syscall.SIGSTOP)
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
	last := 0
	for _, e := range sent {
		last = max(last, e.Seq)
	}
	// every key got every seq up to last: each partition's event time ends at last
	want := fixedWindows(sent, crashWindowSize, crashWindowSize, last)
	if len(want) < 2*len(keys) {
		t.Fatalf("only %d windows closed (last seq %d)", len(want), last)
	}
	waitEmitted(t, client, env.prefix, want, 30*time.Second)
	w1.stop(t)
	w3.stop(t)
	waitEmitted(t, client, env.prefix, want, time.Second)
	noViolations(t, env)
	t.Logf("%d events sent, %d processings, %d windows emitted", len(sent), len(processed(t, env)), len(want))
}
