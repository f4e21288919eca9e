package task_test

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/leatdev/leat/app"
	"github.com/leatdev/leat/internal/tools/redistest"
	"github.com/leatdev/leat/task"
	"github.com/redis/go-redis/v9"
)

// privateQueue declares queue name on an app of a redis-server of the
// test's own, whose command counts and pauses are the test's alone.
func privateQueue(t *testing.T, name string) (*task.Queue[job, out], *redis.Client) {
	t.Helper()
	c := redistest.Start(t).Client(t)
	a, err := app.New(app.Config{Name: "shop", Client: c, KeyPrefix: "join", Logger: testLogger()})
	if err != nil {
		t.Fatal(err)
	}
	q, err := task.Declare[job, out](a, name)
	if err != nil {
		t.Fatal(err)
	}
	return q, c
}

// scriptCalls returns how many script calls the server ran.
func scriptCalls(t *testing.T, c *redis.Client) int {
	t.Helper()
	info, err := c.Info(t.Context(), "commandstats").Result()
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, line := range strings.Split(info, "\n") {
		name, rest, ok := strings.Cut(strings.TrimSpace(line), ":")
		if name != "cmdstat_evalsha" && name != "cmdstat_eval" || !ok {
			continue
		}
		calls, _, _ := strings.Cut(strings.TrimPrefix(rest, "calls="), ",")
		v, _ := strconv.Atoi(calls)
		n += v
	}
	return n
}

// Enqueues made at once from many goroutines share script calls, and each
// gets its own task's ID, the task holding its own payload.
func TestConcurrentEnqueuesShareCalls(t *testing.T) {
	t.Parallel()
	q, c := privateQueue(t, "joined")
	ctx := ctxT(t)
	if _, err := q.Enqueue(ctx, job{N: -1}); err != nil { // registered, scripts loaded
		t.Fatal(err)
	}
	if err := c.ConfigResetStat(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	const goroutines, each = 16, 100
	ids := make([][]string, goroutines)
	var wg sync.WaitGroup
	errs := make(chan error, goroutines)
	for g := range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				id, err := q.Enqueue(ctx, job{N: g*each + i})
				if err != nil {
					errs <- err
					return
				}
				ids[g] = append(ids[g], id)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	calls := scriptCalls(t, c)
	if calls >= goroutines*each {
		t.Errorf("%d script calls for %d enqueues from %d goroutines: none shared", calls, goroutines*each, goroutines)
	}
	seen := map[string]bool{}
	for g := range goroutines {
		for i, id := range ids[g] {
			if seen[id] {
				t.Fatalf("ID %s given to two enqueues", id)
			}
			seen[id] = true
			info, err := q.Info(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			var got job
			if err := json.Unmarshal(info.Payload, &got); err != nil || got.N != g*each+i {
				t.Fatalf("task %s holds %s, want the payload of enqueue %d (%v)", id, info.Payload, g*each+i, err)
			}
		}
	}
	t.Logf("%d enqueues from %d goroutines in %d script calls", goroutines*each, goroutines, calls)
}

// Enqueues of one unique key made at once, sharing rounds or not: one
// creates the task, every other gets its ID and ErrDuplicate.
func TestConcurrentUniqueEnqueues(t *testing.T) {
	e := newEnv(t)
	ctx := ctxT(t)
	q, err := task.Declare[job, out](e.app("producer"), "joined-unique")
	if err != nil {
		t.Fatal(err)
	}
	const n = 32
	ids := make([]string, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ids[i], errs[i] = q.Enqueue(ctx, job{N: i}, task.UniqueKey("order-7", time.Hour))
		}()
	}
	wg.Wait()
	created := 0
	for i := range n {
		switch {
		case errs[i] == nil:
			created++
		case !errors.Is(errs[i], task.ErrDuplicate):
			t.Fatalf("enqueue %d: %v", i, errs[i])
		}
		if ids[i] != ids[0] {
			t.Fatalf("enqueue %d got ID %s, enqueue 0 %s: one task for one unique key", i, ids[i], ids[0])
		}
	}
	if created != 1 {
		t.Fatalf("%d enqueues created the task, want 1", created)
	}
}

// While both script calls of joining enqueues are under way (held up by
// CLIENT PAUSE), an enqueue waits: one whose context ends meanwhile leaves
// without its task being written, one that stays is written in a round
// after and answered with its own ID.
func TestEnqueueLeavesRoundOnCancel(t *testing.T) {
	t.Parallel()
	q, c := privateQueue(t, "joined-cancel")
	ctx := ctxT(t)
	if _, err := q.Enqueue(ctx, job{N: -1}); err != nil { // registered, scripts loaded
		t.Fatal(err)
	}
	if err := c.Do(ctx, "CLIENT", "PAUSE", 20000, "WRITE").Err(); err != nil {
		t.Fatal(err)
	}
	// Two calls under way (the most at once), held up by the pause.
	type result struct {
		id  string
		err error
	}
	patient := make(chan result, 1)
	go func() {
		id, err := q.Enqueue(ctx, job{N: 1}, task.ID("patient"))
		patient <- result{id, err}
	}()
	redistest.Eventually(t, 5*time.Second, "the first enqueue's round held up by the pause", func() bool {
		return redistest.Blocked(t, c, "evalsha") == 1
	})
	second := make(chan result, 1)
	go func() {
		id, err := q.Enqueue(ctx, job{N: 2}, task.ID("second"))
		second <- result{id, err}
	}()
	redistest.Eventually(t, 5*time.Second, "the second enqueue's round held up too", func() bool {
		return redistest.Blocked(t, c, "evalsha") == 2
	})
	// A third waits for a round, and gives up.
	waitCtx, cancelWait := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancelWait()
	if _, err := q.Enqueue(waitCtx, job{N: 3}, task.ID("waiting")); !errors.Is(err, context.DeadlineExceeded) || strings.Contains(err.Error(), "may have been created") {
		t.Fatalf("enqueue waiting for a round: %v, want its context's error, nothing written", err)
	}
	joined := make(chan result, 1)
	go func() {
		id, err := q.Enqueue(ctx, job{N: 5}, task.ID("joined"))
		joined <- result{id, err}
	}()
	if err := c.Do(ctx, "CLIENT", "UNPAUSE").Err(); err != nil {
		t.Fatal(err)
	}
	for name, ch := range map[string]chan result{"patient": patient, "second": second, "joined": joined} {
		if r := <-ch; r.err != nil || r.id != name {
			t.Fatalf("enqueue of %s: %q %v", name, r.id, r.err)
		}
	}
	if info, err := q.Info(ctx, "joined"); err != nil || string(info.Payload) != `{"n":5}` {
		t.Fatalf("the task of the enqueue that waited: %+v %v", info, err)
	}
	if _, err := q.Info(ctx, "waiting"); !errors.Is(err, task.ErrNotFound) {
		t.Fatalf("the task of the enqueue that left before its round: %v, want ErrNotFound", err)
	}
	// The queue goes on joining rounds.
	if id, err := q.Enqueue(ctx, job{N: 4}, task.ID("after")); err != nil || id != "after" {
		t.Fatalf("enqueue after: %q %v", id, err)
	}
}
