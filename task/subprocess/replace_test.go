package subprocess_test

import (
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/leatdev/leat/app"
	"github.com/leatdev/leat/internal/tools/redistest"
	"github.com/leatdev/leat/task"
	"github.com/leatdev/leat/task/subprocess"
)

// enqueueMap enqueues payload p on q.
func enqueueMap(t *testing.T, q *task.Queue[json.RawMessage, json.RawMessage], p map[string]any) string {
	t.Helper()
	b, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	id, err := q.Enqueue(ctxT(t), b)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// TestExecRefreshWorker: every task of 50 asks for its process to be
// replaced (refresh_worker) at concurrency 2: each succeeds at its first
// attempt (none was given to a process being stopped, which would fail it)
// and each ran on a process of its own.
func TestExecRefreshWorker(t *testing.T) {
	e := newEnv(t)
	// -S: a start without the site module, quicker: this test starts 50.
	ex := newExec(t, subprocess.Config{Command: []string{needPython(t), "-S", "testdata/exec_handler.py"}})
	q := execQueue(t, e, ex, task.Concurrency(4))
	const n = 50
	ids := make([]string, n)
	for i := range ids {
		ids[i] = enqueueMap(t, q, map[string]any{"op": "pid", "refresh": true})
	}
	pids := map[int]string{}
	for _, id := range ids {
		r := resultOf(t, q, id)
		if r.Attempt != 1 || r.PID == 0 {
			t.Fatalf("task %s: result %+v, want a success at attempt 1", id, r)
		}
		if other, ok := pids[r.PID]; ok {
			t.Fatalf("tasks %s and %s both ran on process %d, which asked to be replaced", other, id, r.PID)
		}
		pids[r.PID] = id
	}
	if c, err := q.Counts(ctxT(t)); c[task.Succeeded] != n {
		t.Fatalf("counts %v (%v), want %d succeeded", c, err, n)
	}
	redistest.Eventually(t, 10*time.Second, "every replaced process counted", func() bool { return ex.Stats().Replaced == n })
	// A task without the flag, or with false or a value that is not a
	// boolean, keeps its process; its result counts all the same.
	for _, refresh := range []any{nil, false, "yes", 1} {
		p := map[string]any{"op": "pid"}
		if refresh != nil {
			p["refresh"] = refresh
		}
		if r := resultOf(t, q, enqueueMap(t, q, p)); r.Attempt != 1 {
			t.Fatalf("refresh_worker %v: result %+v", refresh, r)
		}
		if s := ex.Stats(); s.Replaced != n {
			t.Fatalf("refresh_worker %v: stats %+v, want %d replaced", refresh, s, n)
		}
	}
}

// TestExecMaxTasksPerProcess: with MaxTasksPerProcess 3, 10 tasks run one
// at a time take ceil(10/3) = 4 processes, none running more than 3, and
// every task succeeds at its first attempt. A negative maximum is refused.
func TestExecMaxTasksPerProcess(t *testing.T) {
	e := newEnv(t)
	ex := newExec(t, subprocess.Config{MaxTasksPerProcess: 3})
	q := execQueue(t, e, ex, task.Concurrency(1))
	const n, per = 10, 3
	ids := make([]string, n)
	for i := range ids {
		ids[i] = enqueueOp(t, q, op{Op: "pid"})
	}
	ran := map[int]int{}
	for _, id := range ids {
		r := resultOf(t, q, id)
		if r.Attempt != 1 {
			t.Fatalf("task %s: result %+v, want a success at attempt 1", id, r)
		}
		ran[r.PID]++
	}
	if len(ran) != (n+per-1)/per {
		t.Fatalf("tasks per process %v: want %d processes", ran, (n+per-1)/per)
	}
	for pid, k := range ran {
		if k > per {
			t.Fatalf("process %d ran %d tasks, over %d", pid, k, per)
		}
	}
	if _, err := subprocess.New(subprocess.Config{Command: []string{"true"}, MaxTasksPerProcess: -1}); err == nil ||
		!strings.Contains(err.Error(), "max tasks per process -1") {
		t.Fatalf("New with a negative maximum: %v", err)
	}
}

// TestExecConcurrencyLine: a handler's {"concurrency": N} line lowers the
// tasks its worker runs at once (seen by the handler itself) and stops the
// idle processes beyond it; raised above the queue's concurrency it is
// capped there; a value that is not an integer of at least 1 is ignored.
func TestExecConcurrencyLine(t *testing.T) {
	e := newEnv(t)
	ctx := ctxT(t)
	var logs redistest.Log // says when the worker applied a concurrency
	a, err := app.New(app.Config{Name: "shop", Client: e.client, KeyPrefix: e.prefix, WorkerID: "w1",
		Logger: slog.New(slog.NewTextHandler(&logs, nil)), LeaderLease: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	ex := newExec(t, subprocess.Config{})
	q, err := task.Handle(a, "ex", ex.Handle, task.Concurrency(4), task.FetchWhen(ex.Wait), task.ConcurrencyFunc(ex.Concurrency))
	if err != nil {
		t.Fatal(err)
	}
	e.run(a)
	// maxInFlight runs 12 tasks of 100ms and returns the most that ran at
	// once as their handler counted.
	maxInFlight := func() int {
		dir := t.TempDir()
		ids := make([]string, 12)
		for i := range ids {
			ids[i] = enqueueMap(t, q, map[string]any{"op": "inflight", "dir": dir, "n": 100})
		}
		peak := 0
		for _, id := range ids {
			raw, err := q.Result(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			var r struct{ Inflight int }
			if err := json.Unmarshal(raw, &r); err != nil || r.Inflight < 1 {
				t.Fatalf("result %s (%v)", raw, err)
			}
			peak = max(peak, r.Inflight)
		}
		return peak
	}
	if p := maxInFlight(); p > 4 {
		t.Fatalf("%d tasks at once at concurrency 4", p)
	}
	resultOf(t, q, enqueueMap(t, q, map[string]any{"op": "pid", "conc": 1}))
	redistest.Eventually(t, 10*time.Second, "the worker at 1", func() bool { return strings.Contains(logs.String(), "to=1") })
	redistest.Eventually(t, 10*time.Second, "the idle processes beyond 1 stopped", func() bool { return ex.Stats().Running == 1 })
	if p := maxInFlight(); p != 1 {
		t.Fatalf("%d tasks at once after the handler asked for 1", p)
	}
	// Hostile values are ignored: the result is read after the line.
	for _, bad := range []any{0, -3, 2.5, "2", true, 1e300, []int{2}} {
		resultOf(t, q, enqueueMap(t, q, map[string]any{"op": "pid", "conc": bad}))
		if s := ex.Stats(); s.Concurrency != 1 {
			t.Fatalf("after a concurrency line of %v: stats %+v, want the 1 asked before", bad, s)
		}
	}
	resultOf(t, q, enqueueMap(t, q, map[string]any{"op": "pid", "conc": 100}))
	redistest.Eventually(t, 10*time.Second, "the worker back at 4", func() bool { return strings.Contains(logs.String(), "from=1 to=4") })
	if s := ex.Stats(); s.Concurrency != 100 {
		t.Fatalf("stats %+v, want 100 asked", s)
	}
	if c := ex.Concurrency(4); c != 4 {
		t.Fatalf("Concurrency(4) = %d with 100 asked, want 4 (capped)", c)
	}
	if p := maxInFlight(); p > 4 {
		t.Fatalf("%d tasks at once at concurrency 4 with 100 asked", p)
	}
	if strings.Contains(logs.String(), "to=100") {
		t.Fatalf("the worker went over the queue's concurrency:\n%s", logs.String())
	}
}
