package app_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/leatdev/leat/app"
	"github.com/leatdev/leat/executor"
	"github.com/leatdev/leat/internal/rdb"
	"github.com/leatdev/leat/internal/tools/redistest"
	"github.com/leatdev/leat/middleware"
	"github.com/leatdev/leat/stream"
	"github.com/redis/go-redis/v9"
)

// newTableApp returns newApp's app and stream of the test's env, and a table
// "counts" of processor on it.
func newTableApp(t *testing.T, partitions int, processor string) (*env, *app.App, *stream.Stream[event], *stream.Table[int]) {
	t.Helper()
	env := newEnv(t)
	a, s := env.newApp(partitions, nil)
	counts, err := stream.DeclareTable[int](s, processor, "counts")
	if err != nil {
		t.Fatal(err)
	}
	return env, a, s, counts
}

// addOne adds one to key's count in st.
func addOne(ctx context.Context, st *stream.Store[int], key string) error {
	n, _, err := st.Get(ctx, key)
	if err != nil {
		return err
	}
	return st.Set(key, n+1)
}

// countsOf reads each key's count in the table from outside the processor.
func countsOf(t *testing.T, tbl *stream.Table[int], keys []string) map[string]int {
	t.Helper()
	out := map[string]int{}
	for _, k := range keys {
		n, _, err := tbl.Get(context.Background(), k)
		if err != nil {
			t.Fatal(err)
		}
		out[k] = n
	}
	return out
}

// sentPerKey counts the events sent for each key.
func sentPerKey(sent []event) map[string]int {
	out := map[string]int{}
	for _, e := range sent {
		out[e.Key]++
	}
	return out
}

// waitCounts waits until the table holds want for every key.
func waitCounts(t *testing.T, tbl *stream.Table[int], want map[string]int, within time.Duration) {
	t.Helper()
	keys := make([]string, 0, len(want))
	for k := range want {
		keys = append(keys, k)
	}
	deadline := time.Now().Add(within)
	for {
		got := countsOf(t, tbl, keys)
		same := true
		for k, n := range want {
			if got[k] != n {
				same = false
			}
		}
		if same {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("table counts %v, want %v", got, want)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Each event adds one to its key's count: read your own writes within an
// event and a batch, applied with the acknowledgement, read back from
// outside with Table.Get.
func TestTableCountsEvents(t *testing.T) {
	t.Parallel()
	for _, batches := range []bool{false, true} {
		t.Run(fmt.Sprintf("batches=%v", batches), func(t *testing.T) {
			t.Parallel()
			env, a, s, counts := newTableApp(t, 4, "count")
			err := app.Process(a, s, "count", func(ctx context.Context, events *stream.Events[event]) error {
				st := counts.In(events)
				if batches {
					for batch := range events.Batches(50, 20*time.Millisecond) {
						for _, e := range batch {
							if err := addOne(ctx, st, string(e.Key)); err != nil {
								return err
							}
						}
					}
					return nil
				}
				for e := range events.All() {
					if err := addOne(ctx, st, string(e.Key)); err != nil {
						return err
					}
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			keys := []string{"a", "b", "c", "d", "e", "f"}
			startWorker(t, a)
			sent := sendEvents(t, s, keys, 200, 0)
			waitCounts(t, counts, sentPerKey(sent), 30*time.Second)
			// Nothing is left pending: the commits acknowledged the events.
			for p := range 4 {
				n, err := env.client.XPending(context.Background(), env.prefix+fmt.Sprintf(":s:{shop:events:%d}", p), "count").Result()
				if err != nil {
					t.Fatal(err)
				}
				if n.Count != 0 {
					t.Errorf("partition %d: %d entries pending", p, n.Count)
				}
			}
			if _, ok, err := counts.Get(context.Background(), "nobody"); ok || err != nil {
				t.Errorf("Get of a key never written: ok %v, err %v", ok, err)
			}
			// Scan sees every key once, with its value.
			scanned := map[string]int{}
			err = counts.Scan(context.Background(), func(k string, n int) error {
				if _, dup := scanned[k]; dup {
					t.Errorf("Scan gave %q twice", k)
				}
				scanned[k] = n
				return nil
			})
			if err != nil || fmt.Sprint(scanned) != fmt.Sprint(sentPerKey(sent)) {
				t.Errorf("Scan: %v (%v), want %v", scanned, err, sentPerKey(sent))
			}
			stop := errors.New("enough")
			if err := counts.Scan(context.Background(), func(string, int) error { return stop }); err != stop {
				t.Errorf("Scan returned %v, want fn's error", err)
			}
		})
	}
}

// A loop body that fails after writing has its writes dropped: retried by
// the runtime, run again by a middleware, or skipped by the Ignore policy,
// each event's write counts once, or not at all when skipped.
func TestTableDropsWritesOfFailedEvents(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{"retry", "middleware", "ignore"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			_, a, s, counts := newTableApp(t, 2, "count")
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
			err := app.Process(a, s, "count", func(ctx context.Context, events *stream.Events[event]) error {
				st := counts.In(events)
				for e := range events.All() {
					id := fmt.Sprintf("%s/%d", e.Record.Key, e.Record.Seq)
					if err := addOne(ctx, st, string(e.Key)); err != nil {
						return err
					}
					mu.Lock()
					runs[id]++
					r := runs[id]
					mu.Unlock()
					// Every fifth event fails its first run (each run, when
					// its failures are ignored) after writing.
					if e.Record.Seq%5 == 0 && (r == 1 || mode == "ignore") {
						return errors.New("failed after writing")
					}
				}
				return nil
			}, opts...)
			if err != nil {
				t.Fatal(err)
			}
			keys := []string{"a", "b", "c"}
			startWorker(t, a)
			sent := sendEvents(t, s, keys, 40, 0)
			want := sentPerKey(sent)
			if mode == "ignore" {
				for k := range want {
					want[k] -= 8 // seq 0, 5, ..., 35 of each key skipped
				}
			}
			waitCounts(t, counts, want, 30*time.Second)
			// Each key ends with its last event, which succeeds: once its
			// count is right, no write can come later.
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

// Misuse is refused at the call: a key of another partition, a table
// opened in another processor, a value the codec cannot encode.
func TestTableRefusesMisuse(t *testing.T) {
	t.Parallel()
	env, a, s, counts := newTableApp(t, 4, "count")
	other, err := stream.DeclareTable[int](s, "other", "counts")
	if err != nil {
		t.Fatal(err)
	}
	names, err := stream.DeclareTable[string](s, "count", "names", stream.TableCodec(stream.JSON))
	if err != nil {
		t.Fatal(err)
	}
	_, s2 := env.newApp(4, nil) // the same app and stream names, another App value
	foreign, err := stream.DeclareTable[int](s2, "count", "counts")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := stream.DeclareTable[int](s, "count", "counts", stream.TableCodec(stream.JSON)); !errors.Is(err, stream.ErrConflict) {
		t.Errorf("a table declared again with another codec: %v, want ErrConflict", err)
	}
	if _, err := stream.DeclareTable[int](s, "count", "bad name"); err == nil {
		t.Error("a table name with a space was accepted")
	}
	keys := crashKeys(s) // 3 keys on each of the 4 partitions
	errs := make(chan error, 4)
	var once sync.Once
	err = app.Process(a, s, "count", func(ctx context.Context, events *stream.Events[event]) error {
		for e := range events.All() {
			once.Do(func() {
				var elsewhere string
				for _, k := range keys {
					if p, _ := s.Partition(event{Key: k}); p != e.Partition {
						elsewhere = k
					}
				}
				errs <- counts.In(events).Set(elsewhere, 1)
				errs <- other.In(events).Set(string(e.Key), 1)
				errs <- names.In(events).Set(string(e.Key), "bad \xff text")
				errs <- foreign.In(events).Set(string(e.Key), 1)
			})
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	startWorker(t, a)
	sendEvents(t, s, keys[:1], 1, 0)
	for i, want := range []error{stream.ErrOtherPartition, stream.ErrTableElsewhere, stream.ErrEncode, stream.ErrTableElsewhere} {
		select {
		case err := <-errs:
			if !errors.Is(err, want) {
				t.Errorf("got %v, want %v", err, want)
			}
			if i == 3 && !strings.Contains(fmt.Sprint(err), "another app") {
				t.Errorf("a table of another app's stream: %v, want it said", err)
			}
		case <-time.After(20 * time.Second):
			t.Fatal("the processor did not run")
		}
	}
	if n, ok, _ := names.Get(context.Background(), keys[0]); ok {
		t.Errorf("a refused value was stored: %q", n)
	}
}

// Exactly-once state through stalls and kills: worker processes add one to
// their key's count for each event, while one is stopped (SIGSTOP) past its
// lock expiry and resumed in the middle of its events, and another is
// SIGKILLed. Events are processed at least once (some twice), but each
// key's count equals the events sent for it: the writes of an event whose
// processing did not end in its acknowledgement were never applied.
func TestTableExactlyOnceThroughStallsAndKills(t *testing.T) {
	if testing.Short() {
		t.Skip("crash test")
	}
	t.Parallel()
	env := newEnv(t)
	_, s := env.newApp(4, nil)
	counts, err := stream.DeclareTable[int](s, "p", "counts")
	if err != nil {
		t.Fatal(err)
	}
	keys := crashKeys(s)
	start := func(id string) *proc {
		return spawn(t, env, id, workerModeEnv+"=1", "LEAT_TEST_REDIS_URL_W="+redistest.URL(t),
			"LEAT_TEST_PARTITIONS=4", "LEAT_TEST_DELAY=2ms", "LEAT_TEST_TABLE=1")
	}
	w1, w2 := start("w1"), start("w2")
	begin := time.Now()
	stop := flow(t, s, keys, 0)
	redistest.Eventually(t, 20*time.Second, "both workers processing", func() bool {
		return len(partitionsBy(t, env, "w1", begin)) > 0 && len(partitionsBy(t, env, "w2", begin)) > 0
	})

	w1.signal(t, syscall.SIGSTOP) // mid-event: between a write and its commit, most likely
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
	waitCounts(t, counts, sentPerKey(sent), 30*time.Second)
	w1.stop(t)
	w3.stop(t)
	checkProcessed(t, env, sent)
	noViolations(t, env)
	t.Logf("%d events sent, %d processings", len(sent), len(processed(t, env)))
}

// A commit sent while the partition was trusted but held up on a frozen
// link until another worker took the partition over is refused by Redis
// when it finally arrives: the stale owner's write is not applied over the
// new owner's. (The worker gives up on the commit when its trust ends, so
// only the check in Redis stands between the late write and the table.)
func TestTableCommitFencedAfterFrozenLink(t *testing.T) {
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

	written, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	newWorker := func(client *redis.Client, stalls bool) *stream.Table[int] {
		a, s := env.newApp(1, func(c *app.Config) { c.Client = client })
		counts, err := stream.DeclareTable[int](s, "count", "counts")
		if err != nil {
			t.Fatal(err)
		}
		err = app.Process(a, s, "count", func(ctx context.Context, events *stream.Events[event]) error {
			st := counts.In(events)
			for e := range events.All() {
				if err := addOne(ctx, st, string(e.Key)); err != nil {
					return err
				}
				if stalls {
					once.Do(func() {
						close(written)
						<-release // the loop body ends, and the commit goes, once the link froze
					})
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		startWorker(t, a)
		return counts
	}
	newWorker(frozenClient, true)
	_, s := env.newApp(1, nil)
	sendEvents(t, s, []string{"x"}, 1, 0)
	select {
	case <-written:
	case <-time.After(20 * time.Second):
		t.Fatal("the first worker did not process the event")
	}
	px.Freeze()
	close(release) // its commit waits in the proxy, sent while the lock was trusted
	counts := newWorker(env.client, false)
	// The second worker takes the partition once the first one's lock
	// expired, processes the event again and commits (count 1), then
	// another (count 2). The stale commit would set 1.
	waitCounts(t, counts, map[string]int{"x": 1}, 20*time.Second)
	sendEvents(t, s, []string{"x"}, 1, 1)
	waitCounts(t, counts, map[string]int{"x": 2}, 20*time.Second)
	px.Thaw()
	redistest.Eventually(t, 10*time.Second, "the held commit delivered", func() bool { return px.Held() == 0 })
	// Let Redis read what was delivered, then check nothing was added: a
	// later command on another connection proves nothing about the order,
	// so the count is watched for a while.
	deadline := time.Now().Add(500 * time.Millisecond)
	for time.Now().Before(deadline) {
		if n, _, err := counts.Get(context.Background(), "x"); err != nil || n != 2 {
			t.Fatalf("count %d (err %v) after the stale owner's commit arrived, want 2", n, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// A commit Redis refuses for good (the table's key holds another type) is a
// failure of its event: the failure policy applies (here: dead-lettered,
// saying why), and the other events go on.
func TestTableCommitFailureGoesToPolicy(t *testing.T) {
	t.Parallel()
	env, a, s, counts := newTableApp(t, 1, "p")
	// The table's hash of partition 0 is a string: HSET fails with WRONGTYPE.
	if err := env.client.Set(context.Background(), app.Keys(a).Table("events", "p", "counts", 0), "not a hash", 0).Err(); err != nil {
		t.Fatal(err)
	}
	// (Events after it that were done before its commit was tried may be
	// handed out again: their commit went with its.)
	r := newRecorder()
	err := app.Process(a, s, "p", func(ctx context.Context, events *stream.Events[event]) error {
		st := counts.In(events)
		for e := range events.All() {
			if e.Record.Seq == 3 {
				if err := st.Set(string(e.Key), 1); err != nil {
					return err
				}
			}
			r.add(e)
		}
		return nil
	}, app.OnError(app.DeadLetter))
	if err != nil {
		t.Fatal(err)
	}
	sendEvents(t, s, []string{"k"}, 6, 0)
	w := startWorker(t, a)
	dlq := app.Keys(a).DeadLetter("events", "p")
	redistest.Eventually(t, 10*time.Second, "the events handled", func() bool {
		return r.count() == 6 && env.client.XLen(context.Background(), dlq).Val() == 1 && pendingCount(t, env, s, "p") == 0
	})
	if err := w.stop(t); err != nil {
		t.Fatal(err)
	}
	msgs, err := env.client.XRange(context.Background(), dlq, "-", "+").Result()
	if err != nil {
		t.Fatal(err)
	}
	if e, _ := msgs[0].Values[executor.DeadError].(string); !strings.Contains(e, "table writes") || !strings.Contains(e, "WRONGTYPE") {
		t.Fatalf("dead letter %v", msgs[0].Values)
	}
}

// middleware.Dedup in front of a processor with a table: its records are
// written in the commit, so a duplicate done while the first is not yet
// committed is still skipped, and a commit that fails records nothing.
func TestTableWithDedup(t *testing.T) {
	t.Parallel()
	env, a, s, counts := newTableApp(t, 1, "p")
	r := newRecorder()
	err := app.Process(a, s, "p", func(ctx context.Context, events *stream.Events[event]) error {
		st := counts.In(events)
		for e := range events.All() {
			if e.Record.Key == "b" { // written without a read: its commit is what fails
				if err := st.Set("b", 1); err != nil {
					return err
				}
				continue
			}
			if err := addOne(ctx, st, string(e.Key)); err != nil {
				return err
			}
			r.add(e)
		}
		return nil
	}, app.Use(middleware.Dedup(middleware.DedupOptions{})), app.OnError(app.DeadLetter))
	if err != nil {
		t.Fatal(err)
	}
	// 200 events of key a, each sent twice in a row (another entry, the
	// same idempotency key): one backlog, so duplicates are done before
	// the first copy's commit.
	var msgs []stream.Message[event]
	for i := range 200 {
		h := stream.Headers{"idempotency-key": fmt.Sprint("a-", i)}
		msgs = append(msgs, stream.Message[event]{Record: event{Key: "a", Seq: i}, Headers: h},
			stream.Message[event]{Record: event{Key: "a", Seq: i}, Headers: h})
	}
	if _, err := s.SendMessages(context.Background(), msgs); err != nil {
		t.Fatal(err)
	}
	w := startWorker(t, a)
	waitCounts(t, counts, map[string]int{"a": 200}, 20*time.Second)
	redistest.Eventually(t, 10*time.Second, "nothing pending", func() bool { return pendingCount(t, env, s, "p") == 0 })
	if n := r.total(); n != 200 {
		t.Errorf("the loop body ran %d times for 200 events sent twice each", n)
	}

	// A commit that fails for good records nothing: the event is
	// dead-lettered, its idempotency key free.
	hash := app.Keys(a).Table("events", "p", "counts", 0)
	if err := env.client.Del(context.Background(), hash).Err(); err != nil {
		t.Fatal(err)
	}
	if err := env.client.Set(context.Background(), hash, "not a hash", 0).Err(); err != nil {
		t.Fatal(err)
	}
	h := stream.Headers{"idempotency-key": "b-1"}
	if _, err := s.SendMessages(context.Background(), []stream.Message[event]{{Record: event{Key: "b"}, Headers: h}}); err != nil {
		t.Fatal(err)
	}
	dlq := app.Keys(a).DeadLetter("events", "p")
	redistest.Eventually(t, 10*time.Second, "the event dead-lettered", func() bool {
		return env.client.XLen(context.Background(), dlq).Val() == 1
	})
	if err := w.stop(t); err != nil {
		t.Fatal(err)
	}
	if n := env.client.Exists(context.Background(), app.Keys(a).Local(rdb.Dedup("p", "b-1"), "events", 0)).Val(); n != 0 {
		t.Error("the idempotency key of an event whose commit failed was recorded")
	}
}

// Scan pages through a large table's hashes (HSCAN cursors) and sees every
// key once.
func TestTableScanPages(t *testing.T) {
	t.Parallel()
	env, a, _, counts := newTableApp(t, 1, "count")
	pipe := env.client.Pipeline()
	for i := range 3000 {
		v, err := stream.MsgPack.Marshal(i)
		if err != nil {
			t.Fatal(err)
		}
		pipe.HSet(context.Background(), app.Keys(a).Table("events", "count", "counts", 0), fmt.Sprint("k", i), v)
	}
	if _, err := pipe.Exec(context.Background()); err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	err := counts.Scan(context.Background(), func(k string, n int) error {
		if _, dup := seen[k]; dup {
			t.Errorf("Scan gave %q twice", k)
		}
		seen[k] = n
		return nil
	})
	if err != nil || len(seen) != 3000 || seen["k2999"] != 2999 {
		t.Fatalf("Scan saw %d keys (k2999: %d), err %v", len(seen), seen["k2999"], err)
	}
}
