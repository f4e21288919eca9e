package task_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/leatdev/leat/internal/rdb"
	"github.com/leatdev/leat/internal/tools/redistest"
	"github.com/leatdev/leat/task"
)

// concLog records, per key, how many tasks run at once (and the most
// seen), the IDs of the tasks that ran and the sequence numbers in the
// order their runs ended.
type concLog struct {
	mu      sync.Mutex
	running map[string]int
	most    map[string]int
	ids     map[string]map[int]string
	runs    int
}

func newConcLog() *concLog {
	return &concLog{running: map[string]int{}, most: map[string]int{}, ids: map[string]map[int]string{}}
}

func (l *concLog) handler(d time.Duration) func(ctx context.Context, t *task.Task[keyed]) (struct{}, error) {
	return func(ctx context.Context, t *task.Task[keyed]) (struct{}, error) {
		l.mu.Lock()
		l.running[t.Key]++
		l.most[t.Key] = max(l.most[t.Key], l.running[t.Key])
		l.mu.Unlock()
		time.Sleep(d) // the task's work: others of its key may start meanwhile
		l.mu.Lock()
		l.running[t.Key]--
		if l.ids[t.Key] == nil {
			l.ids[t.Key] = map[int]string{}
		}
		l.ids[t.Key][t.Payload.Seq] = t.ID
		l.runs++
		l.mu.Unlock()
		return struct{}{}, nil
	}
}

func (l *concLog) count() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.runs
}

// checkStartOrder checks that the tasks of key started in the order they
// were enqueued: their start times, recorded by Redis in the step that
// took them, never go back.
func checkStartOrder(t *testing.T, q *task.Queue[keyed, struct{}], key string, ids map[int]string) {
	t.Helper()
	seqs := make([]int, 0, len(ids))
	for s := range ids {
		seqs = append(seqs, s)
	}
	sort.Ints(seqs)
	var last time.Time
	for _, s := range seqs {
		in, err := q.Info(ctxT(t), ids[s])
		if err != nil {
			t.Fatal(err)
		}
		if in.StartedAt.Before(last) {
			t.Fatalf("key %s: task %d started at %s, before the one enqueued ahead of it (%s)", key, s, in.StartedAt, last)
		}
		last = in.StartedAt
	}
}

// TestKeyConcurrencyBound: with KeyConcurrency(3), four workers of 6 slots
// each run up to 3 tasks of a key at once and never more, every task
// runs once, and the tasks of a key start in the order they were
// enqueued.
func TestKeyConcurrencyBound(t *testing.T) {
	e := newEnv(t)
	log := newConcLog()
	var q *task.Queue[keyed, struct{}]
	for _, id := range []string{"w1", "w2", "w3", "w4"} {
		a := e.app(id)
		var err error
		q, err = task.Handle(a, "kc", log.handler(5*time.Millisecond), task.Keyed(), task.KeyConcurrency(3), task.Concurrency(6))
		if err != nil {
			t.Fatal(err)
		}
		e.run(a)
	}
	const keys, per = 5, 60
	var wg sync.WaitGroup
	for k := range keys {
		wg.Add(1)
		go func() { defer wg.Done(); enqueueKeyed(t, q, fmt.Sprintf("k%d", k), 0, per) }()
	}
	wg.Wait()
	redistest.Eventually(t, 60*time.Second, "all keyed tasks ran", func() bool { return log.count() == keys*per })
	log.mu.Lock()
	defer log.mu.Unlock()
	reached := false
	for k := range keys {
		key := fmt.Sprintf("k%d", k)
		if m := log.most[key]; m > 3 {
			t.Errorf("key %s ran %d tasks at once, above its key concurrency of 3", key, m)
		} else if m == 3 {
			reached = true
		}
		if len(log.ids[key]) != per {
			t.Errorf("key %s: %d distinct tasks ran, want %d", key, len(log.ids[key]), per)
		}
		checkStartOrder(t, q, key, log.ids[key])
	}
	if !reached {
		t.Errorf("no key ever ran 3 tasks at once: %v", log.most)
	}
	checkCounts(t, e, "kc", map[task.State]int64{task.Succeeded: keys * per})
}

// TestKeyConcurrencyFairness: a key with 1,000 tasks and KeyConcurrency(3)
// holds at most 3 tokens, so 10 keys of 10 tasks enqueued after it all end
// before it has done half of its own.
func TestKeyConcurrencyFairness(t *testing.T) {
	e := newEnv(t)
	ctx := ctxT(t)
	log := newConcLog()
	var q *task.Queue[keyed, struct{}]
	for _, id := range []string{"w1", "w2"} {
		a := e.app(id)
		var err error
		q, err = task.Handle(a, "fair", log.handler(2*time.Millisecond), task.Keyed(), task.KeyConcurrency(3), task.Concurrency(2))
		if err != nil {
			t.Fatal(err)
		}
		e.run(a)
	}
	big := make([]keyed, 1000)
	for i := range big {
		big[i] = keyed{Key: "big", Seq: i}
	}
	if _, err := q.EnqueueMany(ctx, big, task.Key("big")); err != nil {
		t.Fatal(err)
	}
	for k := range 10 {
		enqueueKeyed(t, q, fmt.Sprintf("small%d", k), 0, 10)
	}
	redistest.Eventually(t, 60*time.Second, "the small keys' tasks ran", func() bool {
		log.mu.Lock()
		defer log.mu.Unlock()
		for k := range 10 {
			if len(log.ids[fmt.Sprintf("small%d", k)]) < 10 {
				return false
			}
		}
		return true
	})
	log.mu.Lock()
	bigDone := len(log.ids["big"])
	most := log.most["big"]
	log.mu.Unlock()
	t.Logf("the 100 small tasks ended when the big key had done %d of 1,000", bigDone)
	if bigDone >= 500 {
		t.Errorf("the small keys waited for half of the big key: %d big tasks done first", bigDone)
	}
	if most > 3 {
		t.Errorf("the big key ran %d tasks at once", most)
	}
	redistest.Eventually(t, 60*time.Second, "the big key's tasks ran", func() bool { return log.count() == 1100 })
}

// TestMaxKeyBacklog: an enqueue that would make a key hold more than
// MaxKeyBacklog tasks in line is refused with ErrKeyBacklogFull and stores
// nothing; EnqueueMany refuses the tasks past the bound one by one; other
// keys are not affected; a queue looked up from the registry (the CLI, the
// HTTP API) follows the bound; a task that left the line makes room.
func TestMaxKeyBacklog(t *testing.T) {
	e := newEnv(t)
	ctx := ctxT(t)
	a := e.app("producer")
	q, err := task.Declare[keyed, struct{}](a, "bounded", task.Keyed(), task.MaxKeyBacklog(3), task.KeyConcurrency(2))
	if err != nil {
		t.Fatal(err)
	}
	enqueueKeyed(t, q, "a", 0, 3)
	id, err := q.Enqueue(ctx, keyed{Key: "a", Seq: 3}, task.Key("a"), task.UniqueKey("fourth", time.Hour))
	if !errors.Is(err, task.ErrKeyBacklogFull) || id != "" {
		t.Fatalf("4th task of key a: id %q, err %v; want ErrKeyBacklogFull", id, err)
	}
	ids, err := q.EnqueueMany(ctx, []keyed{{Key: "b"}, {Key: "b", Seq: 1}, {Key: "b", Seq: 2}, {Key: "b", Seq: 3}, {Key: "b", Seq: 4}}, task.Key("b"))
	if !errors.Is(err, task.ErrKeyBacklogFull) {
		t.Fatalf("5 tasks of key b: %v; want ErrKeyBacklogFull", err)
	}
	if len(ids) != 5 || ids[0] == "" || ids[1] == "" || ids[2] == "" || ids[3] != "" || ids[4] != "" {
		t.Fatalf("5 tasks of key b: ids %q, want 3 created and 2 refused", ids)
	}
	checkCounts(t, e, "bounded", map[task.State]int64{task.Pending: 6})
	// the refused task took no unique key: the key is free
	if _, err := q.Enqueue(ctx, keyed{Key: "c"}, task.Key("c"), task.UniqueKey("fourth", time.Hour)); err != nil {
		t.Fatalf("unique key of a refused task: %v", err)
	}

	raw, err := task.Lookup(ctx, e.app("cli"), "bounded")
	if err != nil {
		t.Fatal(err)
	}
	if d := raw.Definition(); d.MaxKeyBacklog != 3 || d.KeyConcurrency != 2 {
		t.Fatalf("looked-up definition: %+v", d)
	}
	if _, err := raw.Enqueue(ctx, json.RawMessage(`{"key":"a"}`), task.Key("a")); !errors.Is(err, task.ErrKeyBacklogFull) {
		t.Fatalf("looked-up queue, 4th task of key a: %v", err)
	}

	// a worker runs key a's tasks: its line empties and takes tasks again
	log := newConcLog()
	w := e.app("w1")
	if _, err := task.Handle(w, "bounded", log.handler(0), task.Keyed(), task.MaxKeyBacklog(3), task.KeyConcurrency(2)); err != nil {
		t.Fatal(err)
	}
	e.run(w)
	redistest.Eventually(t, 20*time.Second, "the tasks ran", func() bool { return log.count() == 7 })
	enqueueKeyed(t, q, "a", 10, 3)
	redistest.Eventually(t, 20*time.Second, "the new tasks ran", func() bool { return log.count() == 10 })
}

// TestKeyConcurrencySettings: out-of-range values and key settings of a
// queue that is not keyed are refused at declaration, matching
// ErrBadSetting for the values; the settings are recorded in the
// definition and, the key concurrency, in the live settings the Redis
// scripts read.
func TestKeyConcurrencySettings(t *testing.T) {
	for _, o := range []task.Option{
		task.KeyConcurrency(0), task.KeyConcurrency(-1), task.KeyConcurrency(task.MaxKeyConcurrencyLimit + 1),
		task.MaxKeyBacklog(0), task.MaxKeyBacklog(-5), task.MaxKeyBacklog(task.MaxKeyBacklogLimit + 1),
	} {
		if _, err := task.NewDefinition("q", task.Keyed(), o); !errors.Is(err, task.ErrBadSetting) {
			t.Errorf("bad key setting accepted or not ErrBadSetting: %v", err)
		}
	}
	if _, err := task.NewDefinition("q", task.KeyConcurrency(2)); err == nil {
		t.Error("KeyConcurrency accepted on a queue that is not keyed")
	}
	if _, err := task.NewDefinition("q", task.MaxKeyBacklog(2)); err == nil {
		t.Error("MaxKeyBacklog accepted on a queue that is not keyed")
	}
	d, err := task.NewDefinition("q", task.Keyed(), task.KeyConcurrency(4), task.MaxKeyBacklog(100))
	if err != nil || d.KeyConcurrency != 4 || d.MaxKeyBacklog != 100 {
		t.Fatalf("definition %+v, %v", d, err)
	}

	e := newEnv(t)
	a := e.app("w1")
	if _, err := task.Declare[keyed, struct{}](a, "live", task.Keyed(), task.KeyConcurrency(4)); err != nil {
		t.Fatal(err)
	}
	if err := a.Register(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	cfg := rdb.NewKeySpace(e.prefix, "shop").TaskConfig("live")
	if n, err := rdb.KeyConcurrency(ctxT(t), e.client, cfg); err != nil || n != 4 {
		t.Fatalf("recorded key concurrency %d, %v; want 4", n, err)
	}
	defs, err := task.Queues(ctxT(t), a)
	if err != nil || len(defs) != 1 || defs[0].KeyConcurrency != 4 {
		t.Fatalf("registry: %+v, %v", defs, err)
	}
}

// TestKeyConcurrencyReclaim: the tasks a worker took with KeyConcurrency(3)
// and died running (it holds 3 of a key's tokens) are reclaimed after the
// visibility timeout and run again by a live worker, the key's other tasks
// too, never more than 3 at once, and the key's line ends empty: no token
// was lost nor left over.
func TestKeyConcurrencyReclaim(t *testing.T) {
	e := newEnv(t)
	ctx := ctxT(t)
	const vis = 500 * time.Millisecond
	producer := e.app("producer")
	q, err := task.Declare[keyed, struct{}](producer, "keyq", task.Keyed(), task.KeyConcurrency(3), task.Visibility(vis))
	if err != nil {
		t.Fatal(err)
	}
	enqueueKeyed(t, q, "k", 0, 8)
	enqueueKeyed(t, q, "other", 0, 2)
	got := ghostFetch(t, e, "keyq", 20)
	byKey := map[string]int{}
	for _, f := range got {
		byKey[f.Key]++
	}
	if byKey["k"] != 3 || byKey["other"] != 2 {
		t.Fatalf("the dying worker took %v, want 3 of key k (its key concurrency) and 2 of key other", byKey)
	}

	log := newConcLog()
	a := e.app("w1")
	if _, err := task.Handle(a, "keyq", log.handler(20*time.Millisecond), task.Keyed(), task.KeyConcurrency(3),
		task.Visibility(vis), task.Concurrency(8)); err != nil {
		t.Fatal(err)
	}
	e.run(a)
	redistest.Eventually(t, 30*time.Second, "every task ran", func() bool { return log.count() == 10 })
	log.mu.Lock()
	most, distinct := log.most["k"], len(log.ids["k"])
	log.mu.Unlock()
	if most > 3 {
		t.Errorf("key k ran %d tasks at once", most)
	}
	if distinct != 8 {
		t.Errorf("key k: %d distinct tasks ran, want 8", distinct)
	}
	for _, f := range got {
		in, err := q.Info(ctx, f.ID)
		if err != nil {
			t.Fatal(err)
		}
		if in.State != task.Succeeded || in.Attempts != 2 {
			t.Errorf("reclaimed task %s: state %s after %d attempts, want succeeded after 2", f.ID, in.State, in.Attempts)
		}
	}
	checkCounts(t, e, "keyq", map[task.State]int64{task.Succeeded: 10})
	ks := rdb.NewKeySpace(e.prefix, "shop")
	redistest.Eventually(t, 10*time.Second, "the keys' lines are empty", func() bool {
		n, err := e.client.Exists(ctx, ks.TaskKeyPrefix("keyq")+"k", ks.TaskKeyPrefix("keyq")+"other").Result()
		return err == nil && n == 0
	})
}

// TestKeyConcurrencyWithKeyRate: a key over its KeyRate with
// KeyConcurrency(3) is parked once, whichever of its 3 tokens met the
// limit; when its window ends it gets back a token per task it may start,
// so after the first window it runs 3 at once again, and no window holds
// more starts than the limit.
func TestKeyConcurrencyWithKeyRate(t *testing.T) {
	e := newEnv(t)
	var mu sync.Mutex
	var ids []string
	running, lateMost := 0, 0
	var first time.Time
	const window, dur = 400 * time.Millisecond, 250 * time.Millisecond
	handler := func(ctx context.Context, tk *task.Task[keyed]) (struct{}, error) {
		mu.Lock()
		running++
		if first.IsZero() {
			first = time.Now()
		} else if time.Since(first) > window {
			lateMost = max(lateMost, running)
		}
		ids = append(ids, tk.ID)
		mu.Unlock()
		time.Sleep(dur)
		mu.Lock()
		running--
		mu.Unlock()
		return struct{}{}, nil
	}
	a := e.app("w1")
	q, err := task.Handle(a, "ratedconc", handler, task.Keyed(), task.KeyConcurrency(3), task.KeyRate(3, window), task.Concurrency(8))
	if err != nil {
		t.Fatal(err)
	}
	e.run(a)
	const n = 24
	enqueueKeyed(t, q, "a", 0, n)
	redistest.Eventually(t, 30*time.Second, "all ran", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(ids) == n
	})
	mu.Lock()
	defer mu.Unlock()
	if lateMost > 3 {
		t.Fatalf("%d tasks of the key ran at once", lateMost)
	}
	if lateMost < 3 {
		t.Errorf("after its first window the key ran at most %d tasks at once: its tokens were not all given back", lateMost)
	}
	var s []time.Time
	for _, id := range ids {
		in, err := q.Info(ctxT(t), id)
		if err != nil {
			t.Fatal(err)
		}
		s = append(s, in.StartedAt)
	}
	checkWindows(t, "key a", s, window, 3)
}

// TestHandleLookupRecordsKeyConcurrency: a worker that handles a queue as
// recorded in the registry ("leat worker --exec") records its key
// concurrency in the live settings the Redis scripts read, as a program
// declaring it does, so tasks run as many at once as the registry says.
func TestHandleLookupRecordsKeyConcurrency(t *testing.T) {
	e := newEnv(t)
	ctx := ctxT(t)
	d, err := task.NewDefinition("exec", task.Keyed(), task.KeyConcurrency(3))
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	ks := rdb.NewKeySpace(e.prefix, "shop")
	if err := rdb.Register(ctx, e.client, ks.TaskQueues(), "exec", b); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	running, most, done := 0, 0, 0
	a := e.app("w1")
	if _, err := task.HandleLookup(ctx, a, "exec", func(ctx context.Context, tk *task.Task[json.RawMessage]) (json.RawMessage, error) {
		mu.Lock()
		running++
		most = max(most, running)
		mu.Unlock()
		time.Sleep(50 * time.Millisecond)
		mu.Lock()
		running--
		done++
		mu.Unlock()
		return json.RawMessage(`null`), nil
	}, task.Concurrency(8)); err != nil {
		t.Fatal(err)
	}
	if n, err := rdb.KeyConcurrency(ctx, e.client, ks.TaskConfig("exec")); err != nil || n != 3 {
		t.Fatalf("recorded key concurrency %d, %v; want 3", n, err)
	}
	e.run(a)
	q, err := task.Lookup(ctx, e.app("cli"), "exec")
	if err != nil {
		t.Fatal(err)
	}
	for range 12 {
		if _, err := q.Enqueue(ctx, json.RawMessage(`{}`), task.Key("k")); err != nil {
			t.Fatal(err)
		}
	}
	redistest.Eventually(t, 20*time.Second, "all ran", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return done == 12
	})
	mu.Lock()
	defer mu.Unlock()
	if most != 3 {
		t.Fatalf("the key ran up to %d tasks at once, want 3", most)
	}
}
