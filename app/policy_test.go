package app_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/leatdev/leat/app"
	"github.com/leatdev/leat/executor"
	"github.com/leatdev/leat/internal/tools/redistest"
	"github.com/leatdev/leat/stream"
	"github.com/vmihailenco/msgpack/v5"
)

var errBoom = errors.New("boom")

// keysOnDistinctPartitions returns n keys that land on n different partitions.
func keysOnDistinctPartitions(t *testing.T, s *stream.Stream[event], n int) []string {
	t.Helper()
	seen := map[int]bool{}
	var out []string
	for i := 0; len(out) < n && i < 10000; i++ {
		k := fmt.Sprintf("key-%d", i)
		p, _ := s.Partition(event{Key: k})
		if !seen[p] {
			seen[p] = true
			out = append(out, k)
		}
	}
	if len(out) < n {
		t.Fatalf("no %d keys on distinct partitions", n)
	}
	return out
}

// failOn processes events, failing on those for which bad returns true.
func failOn(r *recorder, bad func(event) bool) func(context.Context, *stream.Events[event]) error {
	return func(ctx context.Context, events *stream.Events[event]) error {
		for e := range events.All() {
			if bad(e.Record) {
				return fmt.Errorf("event %s/%d: %w", e.Record.Key, e.Record.Seq, errBoom)
			}
			r.add(e)
		}
		return nil
	}
}

func pendingCount(t *testing.T, env *env, s *stream.Stream[event], group string) int64 {
	t.Helper()
	var n int64
	for p := range s.Definition().Partitions {
		res, err := env.client.XPending(context.Background(), app.PartitionKey(s, p), group).Result()
		if err == nil {
			n += res.Count
		}
	}
	return n
}

func TestPolicyHalt(t *testing.T) {
	t.Parallel()
	env := newEnv(t)
	a, s := env.newApp(2, nil)
	r := newRecorder()
	if err := app.Process(a, s, "p", failOn(r, func(e event) bool { return e.Seq == 5 }), app.OnError(app.Halt)); err != nil {
		t.Fatal(err)
	}
	sendEvents(t, s, []string{"a"}, 10, 0)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err := a.Run(ctx) // returns by itself: the policy halts the worker
	if !errors.Is(err, errBoom) || !errors.Is(err, app.ErrHalted) {
		t.Fatalf("Run = %v, want app.ErrHalted wrapping the processor's error", err)
	}
	if ctx.Err() != nil {
		t.Fatal("Run returned only when the test's deadline passed")
	}
	if r.count() != 5 {
		t.Fatalf("processed %d events before the halt, want 5", r.count())
	}
	// The failing event is not acknowledged: it is delivered again on restart.
	if n := pendingCount(t, env, s, "p"); n < 1 {
		t.Fatalf("%d pending after halt, want the failing event pending", n)
	}
	// The halted worker left: no member, no lock.
	if n := env.client.ZCard(ctx, app.Keys(a).Members("events", "p")).Val(); n != 0 {
		t.Fatalf("%d members after halt", n)
	}
}

func TestPolicyQuarantine(t *testing.T) {
	t.Parallel()
	env := newEnv(t)
	a, s := env.newApp(2, nil)
	ks := keysOnDistinctPartitions(t, s, 2)
	bad, good := ks[0], ks[1]
	r := newRecorder()
	err := app.Process(a, s, "p", failOn(r, func(e event) bool { return e.Key == bad && e.Seq == 3 }),
		app.OnError(app.Quarantine), app.Retries(2), app.Backoff(time.Millisecond, 10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	sent := sendEvents(t, s, []string{bad, good}, 20, 0)
	w := startWorker(t, a)
	badP, _ := s.Partition(event{Key: bad})
	qkey := app.Keys(a).Quarantine("events", "p")
	redistest.Eventually(t, 10*time.Second, "quarantine report and the good partition done", func() bool {
		return env.client.HExists(context.Background(), qkey, strconv.Itoa(badP)).Val() && r.count() == 23
	})
	// The quarantined partition stays owned by this worker.
	if owned := a.Executors()[0].Owned(); len(owned) != 2 {
		t.Fatalf("owned %v, want both partitions (quarantined stays owned)", owned)
	}
	if err := w.stop(t); err != nil {
		t.Fatal(err)
	}
	var want []event
	for _, e := range sent {
		if e.Key == good || e.Seq < 3 {
			want = append(want, e)
		}
	}
	r.exactlyOnce(t, want)
	report := env.client.HGet(context.Background(), qkey, strconv.Itoa(badP)).Val()
	if report == "" || !strings.Contains(report, "boom") {
		t.Fatalf("quarantine report %q", report)
	}
}

func TestPolicyIgnore(t *testing.T) {
	t.Parallel()
	env := newEnv(t)
	a, s := env.newApp(4, nil)
	r := newRecorder()
	bad := func(e event) bool { return e.Seq%7 == 3 }
	if err := app.Process(a, s, "p", failOn(r, bad), app.OnError(app.Ignore)); err != nil {
		t.Fatal(err)
	}
	sent := sendEvents(t, s, []string{"a", "b", "c", "d", "e"}, 30, 0)
	var want []event
	for _, e := range sent {
		if !bad(e) {
			want = append(want, e)
		}
	}
	w := startWorker(t, a)
	redistest.Eventually(t, 10*time.Second, "all good events", func() bool {
		return r.count() >= len(want) && pendingCount(t, env, s, "p") == 0
	})
	if err := w.stop(t); err != nil {
		t.Fatal(err)
	}
	r.exactlyOnce(t, want)
	r.inOrder(t, false)
}

func TestPolicyDeadLetter(t *testing.T) {
	t.Parallel()
	for _, batch := range []int{1, 5} {
		t.Run(fmt.Sprintf("batch=%d", batch), func(t *testing.T) {
			t.Parallel()
			env := newEnv(t)
			a, s := env.newApp(1, nil)
			r := newRecorder()
			fn := func(ctx context.Context, events *stream.Events[event]) error {
				for b := range events.Batches(batch, 50*time.Millisecond) {
					for _, e := range b {
						if e.Record.Seq == 7 {
							return errBoom
						}
					}
					for _, e := range b {
						r.add(e)
					}
				}
				return nil
			}
			if err := app.Process(a, s, "p", fn, app.OnError(app.DeadLetter)); err != nil {
				t.Fatal(err)
			}
			sent := sendEvents(t, s, []string{"k"}, 20, 0)
			w := startWorker(t, a)
			dlq := app.Keys(a).DeadLetter("events", "p")
			wantDead := 1
			if batch > 1 {
				wantDead = batch // seq 5..9 form the failing batch
			}
			redistest.Eventually(t, 10*time.Second, "all events handled", func() bool {
				return r.count() == 20-wantDead && env.client.XLen(context.Background(), dlq).Val() == int64(wantDead)
			})
			if err := w.stop(t); err != nil {
				t.Fatal(err)
			}
			if n := pendingCount(t, env, s, "p"); n != 0 {
				t.Fatalf("%d pending after dead-lettering", n)
			}
			msgs, err := env.client.XRange(context.Background(), dlq, "-", "+").Result()
			if err != nil {
				t.Fatal(err)
			}
			seqs := map[int]bool{}
			for _, m := range msgs {
				if m.Values[executor.DeadError] != "boom" || m.Values[executor.DeadStream] != "events" || m.Values[executor.DeadPartition] != "0" {
					t.Fatalf("dead letter %v", m.Values)
				}
				// The original entry's fields are copied as they were.
				var rec event
				if m.Values["codec"] != "msgpack" {
					t.Fatalf("dead letter %v: codec", m.Values)
				}
				if err := msgpack.Unmarshal([]byte(m.Values["data"].(string)), &rec); err != nil {
					t.Fatal(err)
				}
				seqs[rec.Seq] = true
			}
			var want []event
			for _, e := range sent {
				if !seqs[e.Seq] {
					want = append(want, e)
				}
			}
			if !seqs[7] || len(seqs) != wantDead {
				t.Fatalf("dead-lettered %v, want %d events including 7", seqs, wantDead)
			}
			r.exactlyOnce(t, want)
		})
	}
}

// A processor failing on every attempt is retried in place before the policy.
func TestRetryInPlace(t *testing.T) {
	t.Parallel()
	env := newEnv(t)
	a, s := env.newApp(1, nil)
	r := newRecorder()
	attempts := map[int]int{}
	fn := func(ctx context.Context, events *stream.Events[event]) error {
		for e := range events.All() {
			attempts[e.Record.Seq]++
			if e.Record.Seq == 2 && attempts[2] < 3 {
				if e.Deliveries != int64(attempts[2]) {
					return fmt.Errorf("deliveries %d on attempt %d", e.Deliveries, attempts[2])
				}
				return errBoom
			}
			r.add(e)
		}
		return nil
	}
	if err := app.Process(a, s, "p", fn, app.Retries(2), app.Backoff(time.Millisecond, 10*time.Second)); err != nil {
		t.Fatal(err)
	}
	sent := sendEvents(t, s, []string{"k"}, 5, 0)
	w := startWorker(t, a)
	redistest.Eventually(t, 10*time.Second, "5 events", func() bool { return r.count() == 5 })
	if err := w.stop(t); err != nil {
		t.Fatal(err)
	}
	r.exactlyOnce(t, sent)
	r.inOrder(t, false)
	if attempts[2] != 3 {
		t.Fatalf("event 2 attempted %d times, want 3", attempts[2])
	}
}

// Undecodable entries go through the policy and never crash the worker.
func TestPoisonEntry(t *testing.T) {
	t.Parallel()
	env := newEnv(t)
	a, s := env.newApp(1, nil)
	r := newRecorder()
	if err := app.Process(a, s, "p", collect(r), app.OnError(app.DeadLetter)); err != nil {
		t.Fatal(err)
	}
	sendEvents(t, s, []string{"k"}, 2, 0)
	ctx := context.Background()
	key := app.PartitionKey(s, 0)
	env.client.XAdd(ctx, redisXAdd{key, []any{"key", "k", "codec", "msgpack", "data", "\xc1garbage"}}.args())
	env.client.XAdd(ctx, redisXAdd{key, []any{"unrelated", "x"}}.args())
	env.client.XAdd(ctx, redisXAdd{key, []any{"key", "k", "codec", "avro", "data", "x"}}.args())
	sendEvents(t, s, []string{"k"}, 2, 2)
	w := startWorker(t, a)
	dlq := app.Keys(a).DeadLetter("events", "p")
	redistest.Eventually(t, 10*time.Second, "good events and 3 dead letters", func() bool {
		return r.count() == 4 && env.client.XLen(ctx, dlq).Val() == 3
	})
	if err := w.stop(t); err != nil {
		t.Fatal(err)
	}
	r.inOrder(t, false)
}

// A batch wait longer than the grace period is fine: a batch still gathering
// when the worker stops is not handed out, and stays pending for the next
// owner, so the stop takes no longer than the grace period.
func TestBatchWithinBeyondGrace(t *testing.T) {
	t.Parallel()
	env := newEnv(t)
	a, s := env.newApp(1, nil)
	gathering := make(chan struct{}, 1)
	var handed atomic.Int64
	fn := func(ctx context.Context, events *stream.Events[event]) error {
		select {
		case gathering <- struct{}{}:
		default:
		}
		for batch := range events.Batches(10, time.Minute) {
			handed.Add(int64(len(batch)))
		}
		return nil
	}
	if err := app.Process(a, s, "p", fn, app.Grace(time.Second)); err != nil {
		t.Fatal(err)
	}
	sendEvents(t, s, []string{"k"}, 3, 0)
	w := startWorker(t, a)
	<-gathering
	redistest.Eventually(t, 10*time.Second, "the events delivered to the worker", func() bool { return pendingCount(t, env, s, "p") == 3 })
	start := time.Now()
	if err := w.stop(t); err != nil {
		t.Fatalf("Run = %v", err)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Fatalf("stop took %s with a batch gathering", d)
	}
	if handed.Load() != 0 {
		t.Fatalf("%d events handed out in a batch cut short", handed.Load())
	}
	if n := pendingCount(t, env, s, "p"); n != 3 {
		t.Fatalf("%d events pending after the stop, want 3 for the next owner", n)
	}
}

// Per-processor options override the app's defaults, zero included, and
// settings that cannot work are refused at registration.
func TestProcessorOptions(t *testing.T) {
	t.Parallel()
	env := newEnv(t)
	a, s := env.newApp(1, func(c *app.Config) {
		c.Processing.Retry = executor.Retry{Attempts: 5}
		c.Processing.Grace = 7 * time.Second
	})
	nop := func(ctx context.Context, events *stream.Events[event]) error { return nil }
	if err := app.Process(a, s, "zero", nop, app.Retries(0), app.Grace(0), app.OnError(app.Ignore)); err != nil {
		t.Fatal(err)
	}
	if err := app.Process(a, s, "defaults", nop); err != nil {
		t.Fatal(err)
	}
	got := map[string]executor.Options{}
	for _, p := range a.Processors() {
		got[p.Name] = p.Options
	}
	if o := got["zero"]; o.Retry.Attempts != 0 || o.Grace != 0 || o.OnError != app.Ignore || o.LockExpiry != 2*time.Second {
		t.Errorf("explicit zeros: %+v", o)
	}
	// a stream of one partition: the default prefetch is the most, 1,000
	if o := got["defaults"]; o.Retry.Attempts != 5 || o.Grace != 7*time.Second || o.OnError != app.Halt || o.Prefetch != 1000 {
		t.Errorf("app defaults: %+v", o)
	}
	for _, bad := range []app.ProcessorOption{app.LockExpiry(10 * time.Millisecond), app.Prefetch(0), app.Grace(-time.Second), app.Retries(-1), app.Backoff(time.Second, time.Millisecond)} {
		if err := app.Process(a, s, "bad", nop, bad); err == nil || !strings.Contains(err.Error(), `processor "bad"`) {
			t.Errorf("option refused at registration: %v", err)
		}
	}
}

// SkipRetry goes to the policy at once; RetryAfter waits as long as asked.
func TestSkipRetryAndRetryAfter(t *testing.T) {
	t.Parallel()
	env := newEnv(t)
	a, s := env.newApp(1, nil)
	var mu sync.Mutex
	attempts := map[int][]time.Time{}
	fn := func(ctx context.Context, events *stream.Events[event]) error {
		for e := range events.All() {
			mu.Lock()
			attempts[e.Record.Seq] = append(attempts[e.Record.Seq], time.Now())
			n := len(attempts[e.Record.Seq])
			mu.Unlock()
			switch {
			case e.Record.Seq == 0:
				return app.SkipRetry(errBoom)
			case e.Record.Seq == 1 && n == 1:
				return app.RetryAfter(300*time.Millisecond, errBoom)
			}
		}
		return nil
	}
	if err := app.Process(a, s, "p", fn, app.Retries(3), app.Backoff(time.Millisecond, time.Millisecond), app.OnError(app.Ignore)); err != nil {
		t.Fatal(err)
	}
	sendEvents(t, s, []string{"k"}, 2, 0)
	w := startWorker(t, a)
	redistest.Eventually(t, 10*time.Second, "both events done", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(attempts[1]) == 2
	})
	if err := w.stop(t); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if n := len(attempts[0]); n != 1 {
		t.Errorf("SkipRetry: attempted %d times, want 1 (no retries)", n)
	}
	if d := attempts[1][1].Sub(attempts[1][0]); d < 300*time.Millisecond {
		t.Errorf("RetryAfter(300ms): retried after %s", d)
	}
}

// A halt does not cascade across the fleet: the worker that takes the halted
// partition over holds it without processing, and goes on with the others;
// a worker started after the halt tries it again.
func TestHaltDoesNotCascade(t *testing.T) {
	t.Parallel()
	env := newEnv(t)
	r := newRecorder()
	var s *stream.Stream[event]
	var bad, good string
	type member struct {
		w        *worker
		a        *app.App
		attempts *atomic.Int64
	}
	start := func() member {
		a, st := env.newApp(2, nil)
		s = st
		if bad == "" {
			ks := keysOnDistinctPartitions(t, s, 2)
			bad, good = ks[0], ks[1]
		}
		attempts := new(atomic.Int64)
		fn := func(ctx context.Context, events *stream.Events[event]) error {
			for e := range events.All() {
				if e.Record.Key == bad && e.Record.Seq == 3 {
					attempts.Add(1)
					return errBoom
				}
				r.add(e)
			}
			return nil
		}
		if err := app.Process(a, st, "p", fn, app.OnError(app.Halt)); err != nil {
			t.Fatal(err)
		}
		return member{startWorker(t, a), a, attempts}
	}
	m1, m2 := start(), start()
	redistest.Eventually(t, 10*time.Second, "one partition each", func() bool {
		e1, e2 := m1.a.Executors(), m2.a.Executors()
		return len(e1) == 1 && len(e2) == 1 && len(e1[0].Owned()) == 1 && len(e2[0].Owned()) == 1
	})
	sendEvents(t, s, []string{bad, good}, 10, 0)

	// The owner of the bad partition halts by itself.
	var halted, survivor member
	redistest.Eventually(t, 10*time.Second, "a worker halts", func() bool {
		for _, m := range []member{m1, m2} {
			select {
			case err := <-m.w.done:
				m.w.done <- err // keep it for stop
				halted = m
				return true
			default:
			}
		}
		return false
	})
	if err := halted.w.stop(t); !errors.Is(err, errBoom) {
		t.Fatalf("halted worker returned %v", err)
	}
	if halted == m1 {
		survivor = m2
	} else {
		survivor = m1
	}
	// The survivor takes the halted partition over, holds it, does not try
	// the failing event, and goes on with the other partition.
	redistest.Eventually(t, 10*time.Second, "the survivor owns both partitions", func() bool {
		ex := survivor.a.Executors()
		return len(ex) == 1 && len(ex[0].Owned()) == 2
	})
	more := sendEvents(t, s, []string{good}, 5, 100)
	redistest.Eventually(t, 10*time.Second, "the good key's events", func() bool {
		r.mu.Lock()
		defer r.mu.Unlock()
		return r.seen[fmt.Sprintf("%s/%d", good, more[len(more)-1].Seq)] == 1
	})
	select {
	case err := <-survivor.w.done:
		t.Fatalf("the survivor stopped too: %v", err)
	default:
	}
	if n := survivor.attempts.Load(); n != 0 {
		t.Fatalf("the survivor tried the failing event %d times", n)
	}
	if err := survivor.w.stop(t); err != nil {
		t.Fatal(err)
	}

	// A worker started after the halt (a fix deployed) tries again.
	later := start()
	redistest.Eventually(t, 10*time.Second, "the later worker tries the failing event", func() bool { return later.attempts.Load() > 0 })
}

// A panic in a processor is recovered and handled like an error, with its
// stack: here Ignore skips the event, and Halt stops the worker with it.
func TestProcessorPanic(t *testing.T) {
	t.Parallel()
	for _, policy := range []executor.Policy{executor.Ignore, executor.Halt} {
		t.Run(policy.String(), func(t *testing.T) {
			t.Parallel()
			env := newEnv(t)
			a, s := env.newApp(1, nil)
			r := newRecorder()
			fn := func(ctx context.Context, events *stream.Events[event]) error {
				for e := range events.All() {
					if e.Record.Seq == 2 {
						panic("kaboom")
					}
					r.add(e)
				}
				return nil
			}
			if err := app.Process(a, s, "p", fn, app.OnError(policy)); err != nil {
				t.Fatal(err)
			}
			sendEvents(t, s, []string{"k"}, 5, 0)
			if policy == executor.Halt {
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				defer cancel()
				err := a.Run(ctx)
				var pe *executor.PanicError
				if !errors.As(err, &pe) || pe.Value != "kaboom" || !strings.Contains(string(pe.Stack), "policy_test.go") {
					t.Fatalf("Run = %v, want a PanicError with the stack", err)
				}
				return
			}
			w := startWorker(t, a)
			redistest.Eventually(t, 10*time.Second, "the other events", func() bool { return r.count() == 4 })
			if err := w.stop(t); err != nil {
				t.Fatal(err)
			}
		})
	}
}
