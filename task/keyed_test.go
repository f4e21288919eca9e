package task_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/leatdev/leat/internal/tools/redistest"
	"github.com/leatdev/leat/task"
)

type keyed struct {
	Key string `json:"key"`
	Seq int    `json:"seq"`
}

// keyLog records, per key, the order tasks ran in and any overlap.
type keyLog struct {
	mu         sync.Mutex
	inflight   map[string]bool
	seqs       map[string][]int
	violations []string
	finished   map[string]time.Time
}

func newKeyLog() *keyLog {
	return &keyLog{inflight: map[string]bool{}, seqs: map[string][]int{}, finished: map[string]time.Time{}}
}

func (l *keyLog) handler(d time.Duration) func(ctx context.Context, t *task.Task[keyed]) (struct{}, error) {
	return func(ctx context.Context, t *task.Task[keyed]) (struct{}, error) {
		l.mu.Lock()
		if l.inflight[t.Key] {
			l.violations = append(l.violations, fmt.Sprintf("key %s: seq %d started while another ran", t.Key, t.Payload.Seq))
		}
		l.inflight[t.Key] = true
		l.mu.Unlock()
		time.Sleep(d) // the task's work: another of its key starting now would overlap
		l.mu.Lock()
		l.inflight[t.Key] = false
		l.seqs[t.Key] = append(l.seqs[t.Key], t.Payload.Seq)
		l.finished[fmt.Sprintf("%s/%d", t.Key, t.Payload.Seq)] = time.Now()
		l.mu.Unlock()
		return struct{}{}, nil
	}
}

func (l *keyLog) total() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, s := range l.seqs {
		n += len(s)
	}
	return n
}

func enqueueKeyed(t *testing.T, q *task.Queue[keyed, struct{}], key string, from, n int) {
	t.Helper()
	for i := from; i < from+n; i++ {
		if _, err := q.Enqueue(ctxT(t), keyed{Key: key, Seq: i}, task.Key(key)); err != nil {
			t.Fatal(err)
		}
	}
}

// TestKeyedOrderOneAtATime: in a keyed queue served by 3 workers, the tasks
// of each key run in order and never two at once, while keys run in
// parallel.
func TestKeyedOrderOneAtATime(t *testing.T) {
	e := newEnv(t)
	log := newKeyLog()
	var q *task.Queue[keyed, struct{}]
	for _, id := range []string{"w1", "w2", "w3"} {
		a := e.app(id)
		var err error
		q, err = task.Handle(a, "k", log.handler(time.Millisecond), task.Keyed(), task.Concurrency(4))
		if err != nil {
			t.Fatal(err)
		}
		e.run(a)
	}
	const keys, per = 12, 40
	var wg sync.WaitGroup
	for k := range keys {
		wg.Add(1)
		go func() { defer wg.Done(); enqueueKeyed(t, q, fmt.Sprintf("k%d", k), 0, per) }()
	}
	wg.Wait()
	redistest.Eventually(t, 30*time.Second, "all keyed tasks ran", func() bool { return log.total() == keys*per })
	log.mu.Lock()
	defer log.mu.Unlock()
	if len(log.violations) > 0 {
		t.Fatalf("%d overlaps, first: %s", len(log.violations), log.violations[0])
	}
	for k, seqs := range log.seqs {
		for i, s := range seqs {
			if s != i {
				t.Fatalf("key %s ran in order %v", k, seqs)
			}
		}
	}
	checkCounts(t, e, "k", map[task.State]int64{task.Succeeded: keys * per})
}

// TestKeyedHotKeyFairness: a key with 10,000 tasks waiting does not delay
// another key's 10 tasks by more than a few task durations each.
func TestKeyedHotKeyFairness(t *testing.T) {
	e := newEnv(t)
	ctx := ctxT(t)
	log := newKeyLog()
	const dur = 5 * time.Millisecond
	var q *task.Queue[keyed, struct{}]
	for _, id := range []string{"w1", "w2", "w3"} {
		a := e.app(id)
		var err error
		q, err = task.Handle(a, "hot", log.handler(dur), task.Keyed(), task.Concurrency(4))
		if err != nil {
			t.Fatal(err)
		}
		e.run(a)
	}
	hot := make([]keyed, 10_000)
	for i := range hot {
		hot[i] = keyed{Key: "hot", Seq: i}
	}
	if _, err := q.EnqueueMany(ctx, hot, task.Key("hot")); err != nil {
		t.Fatal(err)
	}
	redistest.Eventually(t, 10*time.Second, "the hot key started", func() bool { return log.total() > 0 })
	start := time.Now()
	enqueueKeyed(t, q, "cold", 0, 10)
	redistest.Eventually(t, 20*time.Second, "the cold key's tasks ran", func() bool {
		log.mu.Lock()
		defer log.mu.Unlock()
		return len(log.seqs["cold"]) == 10
	})
	took := time.Since(start)
	log.mu.Lock()
	hotDone := len(log.seqs["hot"])
	violations := len(log.violations)
	log.mu.Unlock()
	t.Logf("10 cold tasks took %s behind a hot key of 10,000 (%d hot done meanwhile; task duration %s)", took, hotDone, dur)
	// Alone, the cold key needs 10 durations; taking turns with the hot key
	// at most doubles that. Allow scheduling slack, far below the 50s the
	// hot backlog takes.
	if took > 10*3*dur+time.Second {
		t.Errorf("cold key starved: %s", took)
	}
	if violations > 0 {
		t.Errorf("%d overlaps", violations)
	}
}

// TestKeyRate: a keyed queue with KeyRate(4, window) served by two workers
// starts at most 4 tasks of a key per fixed window, shared by the workers;
// the next window opens when the last one ends, and other keys are not held
// up. Start times are the ones Redis recorded (the clock the windows are
// counted on), so a slow handler goroutine cannot fake a burst.
func TestKeyRate(t *testing.T) {
	e := newEnv(t)
	var mu sync.Mutex
	ids := map[string][]string{}
	handler := func(ctx context.Context, tk *task.Task[keyed]) (struct{}, error) {
		mu.Lock()
		ids[tk.Key] = append(ids[tk.Key], tk.ID)
		mu.Unlock()
		return struct{}{}, nil
	}
	const window = 400 * time.Millisecond
	var q *task.Queue[keyed, struct{}]
	for _, id := range []string{"w1", "w2"} {
		a := e.app(id)
		var err error
		q, err = task.Handle(a, "rated", handler, task.Keyed(), task.KeyRate(4, window), task.Concurrency(4))
		if err != nil {
			t.Fatal(err)
		}
		e.run(a)
	}
	enqueueKeyed(t, q, "a", 0, 12)
	enqueueKeyed(t, q, "b", 0, 12)
	enqueueKeyed(t, q, "free", 0, 1)
	redistest.Eventually(t, 10*time.Second, "all ran", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(ids["a"]) == 12 && len(ids["b"]) == 12 && len(ids["free"]) == 1
	})
	mu.Lock()
	defer mu.Unlock()
	for _, k := range []string{"a", "b"} {
		var s []time.Time
		for _, id := range ids[k] {
			in, err := q.Info(ctxT(t), id)
			if err != nil {
				t.Fatal(err)
			}
			s = append(s, in.StartedAt)
		}
		// A key waiting out its window is woken when it ends.
		checkWindows(t, "key "+k, s, window, 4)
	}
}
