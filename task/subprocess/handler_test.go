package subprocess_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/leatdev/leat/internal/tools/redistest"
	"github.com/leatdev/leat/task"
	"github.com/leatdev/leat/task/subprocess"
	"github.com/redis/go-redis/v9"
)

func needPython(t *testing.T) string {
	t.Helper()
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 is not installed (scripts/test installs it)")
	}
	return py
}

// newExec returns an Handler running the test handler script (or cmd), closed
// when the test ends.
func newExec(t *testing.T, cfg subprocess.Config) *subprocess.Handler {
	t.Helper()
	py := needPython(t)
	if cfg.Command == nil {
		cfg.Command = []string{py, "testdata/exec_handler.py"}
	}
	if cfg.Logger == nil {
		cfg.Logger = testLogger()
	}
	ex, err := subprocess.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ex.Close() })
	return ex
}

type op struct {
	Op string `json:"op"`
	N  int    `json:"n,omitempty"`
}

// execQueue runs queue "ex" with ex's handler on a worker of a fresh app.
func execQueue(t *testing.T, e *env, ex *subprocess.Handler, opts ...task.Option) *task.Queue[json.RawMessage, json.RawMessage] {
	t.Helper()
	a := e.app("w1")
	opts = append([]task.Option{task.Backoff(10*time.Millisecond, 20*time.Millisecond), task.Concurrency(2), task.FetchWhen(ex.Wait)}, opts...)
	q, err := task.Handle(a, "ex", ex.Handle, opts...)
	if err != nil {
		t.Fatal(err)
	}
	e.run(a)
	return q
}

func enqueueOp(t *testing.T, q *task.Queue[json.RawMessage, json.RawMessage], o op) string {
	t.Helper()
	b, _ := json.Marshal(o)
	id, err := q.Enqueue(ctxT(t), b)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

type opResult struct {
	Op      string `json:"op"`
	Attempt int    `json:"attempt"`
	PID     int    `json:"pid"`
}

func resultOf(t *testing.T, q *task.Queue[json.RawMessage, json.RawMessage], id string) opResult {
	t.Helper()
	raw, err := q.Result(ctxT(t), id)
	if err != nil {
		t.Fatal(err)
	}
	var r opResult
	if err := json.Unmarshal(raw, &r); err != nil {
		t.Fatalf("result %s: %v", raw, err)
	}
	return r
}

// TestExecPythonExample runs the Python example handler on two workers
// (apps, each with its own processes) at concurrency 4: every task
// succeeds, and each worker starts at most 4 processes.
func TestExecPythonExample(t *testing.T) {
	e := newEnv(t)
	ctx := ctxT(t)
	py := needPython(t)
	n := 200
	if os.Getenv("LEAT_TEST_LONG") != "" {
		n = 1000
	}
	var q *task.Queue[json.RawMessage, json.RawMessage]
	var execs []*subprocess.Handler
	for _, id := range []string{"w1", "w2"} {
		ex := newExec(t, subprocess.Config{Command: []string{py, "handler.py"}, Dir: "../../examples/tasks-python"})
		execs = append(execs, ex)
		a := e.app(id)
		var err error
		q, err = task.Handle(a, "words", ex.Handle, task.Concurrency(4), task.FetchWhen(ex.Wait))
		if err != nil {
			t.Fatal(err)
		}
		e.run(a)
	}
	type words struct {
		Text string `json:"text"`
	}
	ids := make([]string, n)
	for i := range ids {
		b, _ := json.Marshal(words{Text: strings.Repeat("w ", i%7+1)})
		id, err := q.Enqueue(ctx, b)
		if err != nil {
			t.Fatal(err)
		}
		ids[i] = id
	}
	for i, id := range ids {
		raw, err := q.Result(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		var r struct{ Words int }
		if err := json.Unmarshal(raw, &r); err != nil || r.Words != i%7+1 {
			t.Fatalf("task %d: result %s (%v)", i, raw, err)
		}
	}
	for i, ex := range execs {
		if s := ex.Stats(); s.Started > 4 || !s.Healthy {
			t.Errorf("worker %d: %+v, want at most 4 processes started", i, s)
		}
	}
	if c, _ := q.Counts(ctx); c[task.Succeeded] != int64(n) {
		t.Fatalf("counts %v", c)
	}
}

// TestExecProcessDiesMidTask: a process that exits while running a task
// fails the attempt retryably; a new process runs the retry.
func TestExecProcessDiesMidTask(t *testing.T) {
	e := newEnv(t)
	ex := newExec(t, subprocess.Config{BackoffMin: 10 * time.Millisecond})
	q := execQueue(t, e, ex)
	r := resultOf(t, q, enqueueOp(t, q, op{Op: "die"}))
	if r.Attempt != 2 {
		t.Fatalf("result %+v, want a success at attempt 2", r)
	}
	// The retry may start its own process while Wait starts one for the
	// fetches to come.
	if s := ex.Stats(); s.Started < 2 || s.Started > 3 {
		t.Fatalf("stats %+v, want 2 or 3 processes started", s)
	}
}

// TestExecKilledMidTask: a child killed from outside while it runs a task
// takes its own children down with it (its process group is killed); the
// task is retried on a new child.
func TestExecKilledMidTask(t *testing.T) {
	e := newEnv(t)
	ctx := ctxT(t)
	ex := newExec(t, subprocess.Config{BackoffMin: 10 * time.Millisecond})
	q := execQueue(t, e, ex)
	id := enqueueOp(t, q, op{Op: "grandchild"})
	var pids struct{ PID, Grandchild int }
	redistest.Eventually(t, 10*time.Second, "progress with the pids", func() bool {
		in, err := q.Info(ctx, id)
		return err == nil && in.Progress != nil && json.Unmarshal(in.Progress, &pids) == nil
	})
	if err := syscall.Kill(pids.PID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	r := resultOf(t, q, id)
	if r.Attempt != 2 || r.PID == pids.PID {
		t.Fatalf("result %+v after killing %d", r, pids.PID)
	}
	redistest.Eventually(t, 10*time.Second, "the grandchild gone", func() bool {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pids.Grandchild))
		return err != nil || strings.Contains(string(b), ") Z ")
	})
}

// TestExecNeverReady: a process that does not say ready within the start
// timeout is killed and restarted with backoff, the Handler unhealthy
// meanwhile; the task runs once a process is ready. (The start timeout
// leaves Python, started through a version manager's shim on a loaded
// machine, the time to record its start.)
func TestExecNeverReady(t *testing.T) {
	e := newEnv(t)
	starts := filepath.Join(t.TempDir(), "starts")
	ex := newExec(t, subprocess.Config{
		StartTimeout: 4 * time.Second, BackoffMin: 100 * time.Millisecond,
		Env: []string{"STARTS_FILE=" + starts, "READY_AT=3"},
	})
	q := execQueue(t, e, ex, task.Concurrency(1))
	begin := time.Now()
	id := enqueueOp(t, q, op{Op: "echo"})
	redistest.Eventually(t, 10*time.Second, "an unhealthy exec", func() bool { return !ex.Stats().Healthy })
	r := resultOf(t, q, id)
	if r.Attempt != 1 {
		t.Fatalf("result %+v, want attempt 1", r)
	}
	b, _ := os.ReadFile(starts)
	// A process killed before it wrote its start is not counted in the file.
	if s := ex.Stats(); s.Started < 3 || len(b) != 3 || !s.Healthy {
		t.Fatalf("stats %+v, %d starts recorded", s, len(b))
	}
	// Two start timeouts and backoffs of 100ms and 200ms.
	if took := time.Since(begin); took < 8300*time.Millisecond {
		t.Fatalf("took %s: no backoff?", took)
	}
}

// TestExecGarbageLines: lines that are not JSON or name another task are
// ignored, and the task still gets its answer.
func TestExecGarbageLines(t *testing.T) {
	e := newEnv(t)
	ex := newExec(t, subprocess.Config{})
	q := execQueue(t, e, ex)
	r := resultOf(t, q, enqueueOp(t, q, op{Op: "garbage"}))
	if r.Op != "garbage" || r.Attempt != 1 {
		t.Fatalf("result %+v", r)
	}
	if s := ex.Stats(); s.Started != 1 {
		t.Fatalf("stats %+v", s)
	}
}

// TestExecHungTaskTimesOut: a task past its timeout has its process killed;
// the retry runs on a new process.
func TestExecHungTaskTimesOut(t *testing.T) {
	e := newEnv(t)
	ex := newExec(t, subprocess.Config{})
	// The timeout covers starting a handler process too: generous enough
	// for a loaded machine, where the first echo must not time out.
	q := execQueue(t, e, ex, task.Timeout(6*time.Second))
	first := resultOf(t, q, enqueueOp(t, q, op{Op: "echo"}))
	id := enqueueOp(t, q, op{Op: "hang"})
	r := resultOf(t, q, id)
	if r.Attempt != 2 || r.PID == first.PID && ex.Stats().Started < 2 {
		t.Fatalf("result %+v (first %+v), stats %+v", r, first, ex.Stats())
	}
	if s := ex.Stats(); s.Started < 2 {
		t.Fatalf("stats %+v: the hung process was not replaced", s)
	}
}

// TestExecHugeLineAndFinalError: a line over the limit fails its task with
// a clear error, and the process goes on; an error with retry false is
// final.
func TestExecHugeLineAndFinalError(t *testing.T) {
	e := newEnv(t)
	ctx := ctxT(t)
	ex := newExec(t, subprocess.Config{MaxLine: 1024})
	q := execQueue(t, e, ex, task.Concurrency(1))
	id := enqueueOp(t, q, op{Op: "huge", N: 4096})
	in, err := q.Wait(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if in.State != task.Failed || !strings.Contains(in.Error, "over the size limit") {
		t.Fatalf("%+v", in)
	}
	if raw, err := q.Result(ctx, enqueueOp(t, q, op{Op: "huge", N: 10})); err != nil || string(raw) != `"xxxxxxxxxx"` {
		t.Fatalf("%s, %v", raw, err)
	}
	in, err = q.Wait(ctx, enqueueOp(t, q, op{Op: "fail"}))
	if err != nil {
		t.Fatal(err)
	}
	if in.State != task.Failed || !strings.HasSuffix(in.Error, "no way") || in.Attempts != 1 {
		t.Fatalf("%+v", in)
	}
	if s := ex.Stats(); s.Started != 1 {
		t.Fatalf("stats %+v, want the process kept", s)
	}
}

// follow collects the updates of task id until it is done.
func follow(t *testing.T, q interface {
	Follow(context.Context, string) iter.Seq2[task.Update, error]
}, id string) []task.Update {
	t.Helper()
	var got []task.Update
	for u, err := range q.Follow(ctxT(t), id) {
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, u)
	}
	return got
}

// wantUpdates checks n progress reports and partial results, interleaved in
// order, then the end.
func wantUpdates(t *testing.T, got []task.Update, n int) {
	t.Helper()
	if len(got) != 2*n+1 {
		t.Fatalf("%d updates, want %d: %+v", len(got), 2*n+1, got)
	}
	for i := range n {
		p, r := got[2*i], got[2*i+1]
		if p.Kind != task.KindProgress || string(p.Data) != fmt.Sprintf(`{"i":%d}`, i) ||
			r.Kind != task.KindPartial || string(r.Data) != fmt.Sprint(i) || p.Attempt != 1 {
			t.Fatalf("updates %d: %+v %+v", i, p, r)
		}
	}
	last := got[2*n]
	if last.Kind != task.KindDone || last.Info.State != task.Succeeded || string(last.Info.Progress) != fmt.Sprintf(`{"i":%d}`, n-1) {
		t.Fatalf("last update %+v", last)
	}
}

// TestExecUpdates: a process's progress and partial lines are recorded and
// followed in order, while the task runs and after.
func TestExecUpdates(t *testing.T) {
	e := newEnv(t)
	ex := newExec(t, subprocess.Config{})
	q := execQueue(t, e, ex)
	id := enqueueOp(t, q, op{Op: "updates", N: 50})
	var wg sync.WaitGroup
	var live []task.Update
	wg.Add(1)
	go func() { defer wg.Done(); live = follow(t, q, id) }()
	wg.Wait()
	wantUpdates(t, live, 50)
	wantUpdates(t, follow(t, q, id), 50) // again, from the record
}

// TestGoHandlerUpdates: a Go handler's Progress and Partial; the updates
// stream has the task's TTL.
func TestGoHandlerUpdates(t *testing.T) {
	e := newEnv(t)
	ctx := ctxT(t)
	a := e.app("w1")
	q, err := task.Handle(a, "gu", func(ctx context.Context, tk *task.Task[job]) (out, error) {
		for i := range tk.Payload.N {
			if err := tk.Progress(map[string]int{"i": i}); err != nil {
				return out{}, err
			}
			if err := tk.Partial(i); err != nil {
				return out{}, err
			}
		}
		return out{Double: 2 * tk.Payload.N}, nil
	}, task.Retention(time.Hour), task.Timeout(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	id, err := q.Enqueue(ctx, job{N: 20})
	if err != nil {
		t.Fatal(err)
	}
	e.run(a)
	wantUpdates(t, follow(t, q, id), 20)
	keys, err := e.client.Keys(ctx, e.prefix+":tupd:*").Result()
	if err != nil || len(keys) != 1 {
		t.Fatalf("keys %v (%v)", keys, err)
	}
	ttl := e.client.PTTL(ctx, keys[0]).Val()
	if ttl <= 59*time.Minute || ttl > 61*time.Minute {
		t.Fatalf("updates TTL %s, want the retention plus the timeout", ttl)
	}
	// Unknown tasks end a follow with ErrNotFound.
	for _, err := range q.Follow(ctx, "nope") {
		if !errors.Is(err, task.ErrNotFound) {
			t.Fatalf("follow of an unknown task: %v", err)
		}
	}
}

// A line a handler process writes to stderr after its task's result is
// still that task's: it is logged with the task's ID, as it is kept in the
// task's log.
func TestExecStderrAfterResult(t *testing.T) {
	var mu sync.Mutex
	var buf strings.Builder
	logs := func() string { mu.Lock(); defer mu.Unlock(); return buf.String() }
	ex := newExec(t, subprocess.Config{Logger: slog.New(slog.NewTextHandler(writerFunc(func(p []byte) (int, error) {
		mu.Lock()
		defer mu.Unlock()
		return buf.Write(p)
	}), nil))})
	if _, err := ex.RunOnce(ctxT(t), "t-1", json.RawMessage(`{"op":"after"}`), func(string, json.RawMessage) {}); err != nil {
		t.Fatal(err)
	}
	redistest.Eventually(t, 10*time.Second, "the line written after the result", func() bool { return strings.Contains(logs(), "after the result") })
	for _, line := range strings.Split(logs(), "\n") {
		if strings.Contains(line, "after the result") && !strings.Contains(line, "task=t-1") {
			t.Fatalf("logged without its task: %s", line)
		}
	}
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

// A handler's result or update that a reader would decode with
// replacements (here lone surrogates, which Python's json writes as
// escapes) is not stored: the update is dropped, and the task fails for good
// saying why, as a result that does not encode does.
func TestExecLossyResult(t *testing.T) {
	e := newEnv(t)
	ctx := ctxT(t)
	ex := newExec(t, subprocess.Config{})
	q := execQueue(t, e, ex, task.Concurrency(1))
	id := enqueueOp(t, q, op{Op: "lossy"})
	in, err := q.Wait(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if in.State != task.Failed || in.Attempts != 1 || !strings.Contains(in.Error, `encode result: invalid JSON string: \udc00 is half of a UTF-16 surrogate pair`) ||
		len(in.Progress) != 0 {
		t.Fatalf("%+v", in)
	}
}

// A task's headers reach its process in the request line ("headers"),
// which has none for a task enqueued without; the Python SDK gives them to
// the handler as ctx.headers.
func TestExecHeaders(t *testing.T) {
	e := newEnv(t)
	ctx := ctxT(t)
	py := needPython(t)
	sdk, err := filepath.Abs("../../sdk/python/src")
	if err != nil {
		t.Fatal(err)
	}
	script := filepath.Join(t.TempDir(), "echo.py")
	src := `import os
from leat import Snooze, task, main


@task
def echo(payload, ctx):
    if payload.get("path") and not os.path.exists(payload["path"]):
        open(payload["path"], "w").close()
        raise Snooze(0.2)
    return ctx.headers


main()
`
	if err := os.WriteFile(script, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	byHand := execQueue(t, e, newExec(t, subprocess.Config{}))
	a := e.app("w2")
	helped, err := task.Handle(a, "helped", newExec(t, subprocess.Config{Command: []string{py, script}, Env: []string{"PYTHONPATH=" + sdk}}).Handle)
	if err != nil {
		t.Fatal(err)
	}
	e.run(a)
	h := map[string]string{"traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", "lang": "é"}
	for _, headers := range []map[string]string{h, nil} {
		id, err := byHand.Enqueue(ctx, json.RawMessage(`{"op":"headers"}`), task.Headers(headers))
		if err != nil {
			t.Fatal(err)
		}
		raw, err := byHand.Result(ctx, id)
		var got struct {
			Has     bool
			Headers map[string]string
		}
		if err != nil || json.Unmarshal(raw, &got) != nil || got.Has != (headers != nil) || !reflect.DeepEqual(got.Headers, headers) {
			t.Fatalf("the request's headers: %s (%v), want %v", raw, err, headers)
		}
	}
	id, err := helped.Enqueue(ctx, json.RawMessage(`{}`), task.Headers(h))
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]string
	if raw, err := helped.Result(ctx, id); err != nil || json.Unmarshal(raw, &got) != nil || !reflect.DeepEqual(got, h) {
		t.Fatalf("ctx.headers %s (%v), want %v", raw, err, h)
	}
	// The helper's Snooze.
	b, _ := json.Marshal(map[string]string{"path": filepath.Join(t.TempDir(), "snoozed")})
	id, err = helped.Enqueue(ctx, b, task.Headers(h))
	if err != nil {
		t.Fatal(err)
	}
	begun := time.Now()
	if in, err := helped.Wait(ctx, id); err != nil || in.State != task.Succeeded || in.Attempts != 1 || time.Since(begun) < 200*time.Millisecond {
		t.Fatalf("a task the helper snoozed: %+v %v after %s, want it succeeded on attempt 1 after 200ms", in, err, time.Since(begun))
	}
}

// A process that answers {"snooze": S} puts its task back for S seconds,
// the attempt not counted; a snooze out of range fails the attempt.
func TestExecSnooze(t *testing.T) {
	e := newEnv(t)
	ctx := ctxT(t)
	q := execQueue(t, e, newExec(t, subprocess.Config{}), task.MaxRetries(0))
	path := filepath.Join(t.TempDir(), "snoozed")
	b, _ := json.Marshal(map[string]any{"op": "snooze", "n": 300, "path": path})
	id, err := q.Enqueue(ctx, b)
	if err != nil {
		t.Fatal(err)
	}
	redistest.Eventually(t, 10*time.Second, "the task snoozed", func() bool {
		in, err := q.Info(ctx, id)
		return err == nil && in.State == task.Scheduled
	})
	in, err := q.Wait(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if r := resultOf(t, q, id); in.State != task.Succeeded || in.Attempts != 1 || r.Attempt != 1 {
		t.Fatalf("task %s after %d attempts (the process saw attempt %d): want succeeded on attempt 1 after its snooze", in.State, in.Attempts, r.Attempt)
	}
	bad := enqueueOp(t, q, op{Op: "badsnooze"})
	if in, err := q.Wait(ctx, bad); err != nil || in.State != task.Dead || !strings.Contains(in.Error, "snooze for -1 seconds") {
		t.Fatalf("a negative snooze: %+v %v, want the attempt failed (dead: no retries)", in, err)
	}
}

// A JSON null in a line of the protocol is a field left out: a result line
// whose other fields are null ends its task with the result.
func TestExecNullFields(t *testing.T) {
	ex := newExec(t, subprocess.Config{})
	ctx, cancel := context.WithTimeout(ctxT(t), 20*time.Second)
	defer cancel()
	var reports []string
	res, err := ex.RunOnce(ctx, "t-1", json.RawMessage(`{"op":"nulls"}`), func(kind string, data json.RawMessage) {
		reports = append(reports, kind+" "+string(data))
	})
	if err != nil || string(res) != `{"op":"nulls"}` || len(reports) != 0 {
		t.Fatalf("result %s, error %v, reports %q: want the result alone", res, err, reports)
	}
}

// A worker whose handler never says ready takes no task (FetchWhen with
// Handler.Wait): the tasks go to a worker of the same queue whose handler is
// ready, on their first attempt, though the first worker ran long before.
func TestExecNotReadyTakesNoTask(t *testing.T) {
	e := newEnv(t)
	ctx := ctxT(t)
	stuck := newExec(t, subprocess.Config{Command: []string{"sleep", "3600"}, StartTimeout: time.Minute})
	opts := []task.Option{task.Concurrency(2), task.Timeout(10 * time.Second), task.FetchWhen(stuck.Wait)}
	a1 := e.app("w1")
	q, err := task.Handle(a1, "ex", stuck.Handle, opts...)
	if err != nil {
		t.Fatal(err)
	}
	e.run(a1)
	var ids []string
	for range 4 {
		ids = append(ids, enqueueOp(t, q, op{Op: "echo"}))
	}
	// The stuck worker has the tasks to itself until its handler started.
	redistest.Eventually(t, 10*time.Second, "the stuck handler started", func() bool { return stuck.Stats().Started > 0 })
	if c, err := q.Counts(ctx); err != nil || c[task.Pending] != 4 {
		t.Fatalf("counts %v (%v): want the 4 tasks pending", c, err)
	}
	healthy := newExec(t, subprocess.Config{})
	a2 := e.app("w2")
	if _, err := task.Handle(a2, "ex", healthy.Handle, task.Concurrency(2), task.Timeout(10*time.Second), task.FetchWhen(healthy.Wait)); err != nil {
		t.Fatal(err)
	}
	e.run(a2)
	for _, id := range ids {
		if r := resultOf(t, q, id); r.Attempt != 1 {
			t.Fatalf("task %s ran at attempt %d, want 1", id, r.Attempt)
		}
		if in, err := q.Info(ctx, id); err != nil || in.Attempts != 1 {
			t.Fatalf("task %s: %+v, %v: want 1 attempt", id, in, err)
		}
	}
	if err := stuck.Ready(); !errors.Is(err, subprocess.ErrNotReady) {
		t.Fatalf("the stuck handler's readiness: %v", err)
	}
}

// logBuffer is a slog.Logger at level warn writing to a buffer.
type logBuffer struct {
	mu  sync.Mutex
	buf strings.Builder
}

func (b *logBuffer) logger() *slog.Logger {
	return slog.New(slog.NewTextHandler(writerFunc(func(p []byte) (int, error) {
		b.mu.Lock()
		defer b.mu.Unlock()
		return b.buf.Write(p)
	}), &slog.HandlerOptions{Level: slog.LevelWarn}))
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// A handler that dies at start says why: the start failure's error, and
// its log at warn or above, carry the process's last 20 stderr lines.
func TestExecStartFailureStderr(t *testing.T) {
	py := needPython(t)
	var logs logBuffer
	script := `import sys
for i in range(30):
    print("line %d" % i, file=sys.stderr)
print("ModuleNotFoundError: No module named 'torch'", file=sys.stderr)
sys.exit(1)`
	ex := newExec(t, subprocess.Config{Command: []string{py, "-c", script}, Logger: logs.logger()})
	_, err := ex.RunOnce(ctxT(t), "t-1", json.RawMessage(`{}`), nil)
	var se *subprocess.StartError
	if !errors.As(err, &se) || len(se.Stderr) != 20 || se.Stderr[19] != "ModuleNotFoundError: No module named 'torch'" ||
		se.Stderr[0] != "line 11" || !strings.Contains(err.Error(), "exited before its ready line") {
		t.Fatalf("error %v (%#v): want the start failure with the last 20 stderr lines", err, se)
	}
	if l := logs.String(); !strings.Contains(l, "No module named") || !strings.Contains(l, "line 11") || strings.Contains(l, "line 10\\") {
		t.Fatalf("logs at warn: %s", l)
	}
	// RunOnce does not restart the handler, and its log does not say it
	// would.
	if l := logs.String(); strings.Contains(l, "restart") {
		t.Fatalf("logs promise a restart: %s", l)
	}
	if s := ex.Stats(); s.Started != 1 {
		t.Fatalf("stats %+v: RunOnce restarted the handler", s)
	}
}

// A Python handler that prints without flushing works: its processes run
// with PYTHONUNBUFFERED=1, though the worker's environment has none. With
// its stdout buffered all the same, its start failure says that stdout
// must be flushed. (Not parallel: it changes the environment.)
func TestExecUnflushedStdout(t *testing.T) {
	py := needPython(t)
	t.Setenv("PYTHONUNBUFFERED", "")
	os.Unsetenv("PYTHONUNBUFFERED") // restored by Setenv's cleanup
	script := `import json, sys
print(json.dumps({"status": "ready"}))
for line in sys.stdin:
    print(json.dumps({"task_id": json.loads(line)["task_id"], "result": "printed"}))`
	ex := newExec(t, subprocess.Config{Command: []string{py, "-c", script}})
	if res, err := ex.RunOnce(ctxT(t), "t-1", json.RawMessage(`{}`), nil); err != nil || string(res) != `"printed"` {
		t.Fatalf("%s, %v", res, err)
	}
	buffered := newExec(t, subprocess.Config{Command: []string{py, "-c", script}, Env: []string{"PYTHONUNBUFFERED="}, StartTimeout: 4 * time.Second})
	_, err := buffered.RunOnce(ctxT(t), "t-1", json.RawMessage(`{}`), nil)
	if err == nil || !strings.Contains(err.Error(), "no ready line within 4s") || !strings.Contains(err.Error(), "flush=True") {
		t.Fatalf("error %v: want a hint about flushing stdout", err)
	}
}

// envOf returns the environment a handler process of cfg sees.
func envOf(t *testing.T, cfg subprocess.Config) map[string]string {
	t.Helper()
	py := needPython(t)
	cfg.Command = []string{py, "-c", `import json, os, sys
print(json.dumps({"status": "ready"}), flush=True)
for line in sys.stdin:
    print(json.dumps({"task_id": json.loads(line)["task_id"], "result": dict(os.environ)}), flush=True)`}
	raw, err := newExec(t, cfg).RunOnce(ctxT(t), "t-1", json.RawMessage(`{}`), nil)
	var env map[string]string
	if err != nil || json.Unmarshal(raw, &env) != nil {
		t.Fatalf("%s, %v", raw, err)
	}
	return env
}

// Handler processes get none of leat's own variables (its Redis URL with
// its password, its API token, its TLS settings), nor any other variable
// of the worker's outside the allowed ones, but those the configuration
// passes on or sets. (Not parallel: it changes the environment.)
func TestExecEnvironment(t *testing.T) {
	secrets := map[string]string{
		"LEAT_REDIS_URL": "redis://:hunter2@db:6379", "LEAT_SERVE_TOKEN": "s3cret", "LEAT_TLS_KEY": "/etc/leat/key.pem",
	}
	for k, v := range secrets {
		t.Setenv(k, v)
	}
	t.Setenv("DB_PASSWORD", "pw")
	t.Setenv("API_KEY", "k")
	t.Setenv("LANG", "C.UTF-8")
	t.Setenv("TZ", "Europe/Paris")
	t.Setenv("PYTHONIOENCODING", "utf-8")
	check := func(env map[string]string, present map[string]string, absent ...string) {
		t.Helper()
		for k := range secrets {
			if v, ok := env[k]; ok {
				t.Errorf("%s=%s reached the handler", k, v)
			}
		}
		for _, k := range absent {
			if v, ok := env[k]; ok {
				t.Errorf("%s=%s reached the handler", k, v)
			}
		}
		for k, v := range present {
			if env[k] != v {
				t.Errorf("%s=%q in the handler's environment, want %q", k, env[k], v)
			}
		}
	}
	allowed := map[string]string{"LANG": "C.UTF-8", "TZ": "Europe/Paris", "PYTHONIOENCODING": "utf-8", "HOME": os.Getenv("HOME")}
	env := envOf(t, subprocess.Config{})
	check(env, allowed, "DB_PASSWORD", "API_KEY")
	// (A version manager's shim may put its own directories first.)
	if !strings.HasSuffix(env["PATH"], os.Getenv("PATH")) {
		t.Errorf("PATH=%q in the handler's environment, want the worker's %q", env["PATH"], os.Getenv("PATH"))
	}
	check(envOf(t, subprocess.Config{Env: []string{"DB_PASSWORD", "MODE=fast", "UNSET_HERE", "LEAT_QUEUE=set"}}),
		map[string]string{"DB_PASSWORD": "pw", "MODE": "fast", "LANG": "C.UTF-8", "LEAT_QUEUE": "set"}, "API_KEY", "UNSET_HERE")
	check(envOf(t, subprocess.Config{InheritEnv: true, Env: []string{"TZ=UTC"}}),
		map[string]string{"DB_PASSWORD": "pw", "API_KEY": "k", "TZ": "UTC", "LANG": "C.UTF-8"})
	if _, err := subprocess.New(subprocess.Config{Command: []string{"true"}, Env: []string{"LEAT_REDIS_URL"}}); err == nil {
		t.Fatal("a bare LEAT_ name in Env was accepted")
	}
}

// logCalls counts the Redis calls that touch a task log (its key holds
// ":tlog:"), alone or in pipelines.
type logCalls struct{ n atomic.Int64 }

func (h *logCalls) count(cmds ...redis.Cmder) {
	for _, c := range cmds {
		for _, a := range c.Args() {
			if s, ok := a.(string); ok && strings.Contains(s, ":tlog:") {
				h.n.Add(1)
				break
			}
		}
	}
}

func (h *logCalls) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h *logCalls) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error { h.count(cmd); return next(ctx, cmd) }
}
func (h *logCalls) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error { h.count(cmds...); return next(ctx, cmds) }
}

// A handler writing 20,000 stderr lines at once costs Redis a few calls,
// not one per line; its log keeps the last LogCap lines, in order.
func TestExecStderrBatched(t *testing.T) {
	e := newEnv(t)
	ctx := ctxT(t)
	var calls logCalls
	e.client.AddHook(&calls)
	q := execQueue(t, e, newExec(t, subprocess.Config{}), task.Concurrency(1))
	n := 20000
	id := enqueueOp(t, q, op{Op: "spam", N: n})
	resultOf(t, q, id)
	var lines []task.LogLine
	redistest.Eventually(t, 10*time.Second, "the last stderr line in the log", func() bool {
		var err error
		lines, err = q.Logs(ctx, id)
		return err == nil && len(lines) > 0 && lines[len(lines)-1].Line == fmt.Sprintf("line %d", n-1)
	})
	if len(lines) != task.LogCap || lines[0].Line != fmt.Sprintf("line %d", n-task.LogCap) {
		t.Fatalf("%d log lines, first %+v: want the last %d", len(lines), lines[0], task.LogCap)
	}
	// One call per task per logEvery (100ms) at most: the bound leaves a
	// loaded machine 5s of writing.
	if c := calls.n.Load(); c > 50 {
		t.Fatalf("%d Redis calls for %d stderr lines", c, n+1)
	}
}

// A task fetched while the handler was ready, whose process then fails to
// start, is handed back to the queue, its attempt not counted; the worker
// fetches no more tasks while its handler fails.
func TestExecStartFailureHandsBack(t *testing.T) {
	e := newEnv(t)
	ctx := ctxT(t)
	// The backoff after a failed start is the window the test sees the
	// task handed back in: long enough for a loaded machine's polls.
	ex := newExec(t, subprocess.Config{
		BackoffMin: 5 * time.Second, Env: []string{"STARTS_FILE=" + filepath.Join(t.TempDir(), "starts"), "EXIT_AFTER=1"},
	})
	q := execQueue(t, e, ex, task.Timeout(time.Minute))
	hung := enqueueOp(t, q, op{Op: "hang"})
	redistest.Eventually(t, 20*time.Second, "the first task running", func() bool {
		in, err := q.Info(ctx, hung)
		return err == nil && in.State == task.Active
	})
	id := enqueueOp(t, q, op{Op: "echo"})
	// A second process starts for it only (the first is ready and busy).
	redistest.Eventually(t, 20*time.Second, "the task handed back after a failed start", func() bool {
		in, err := q.Info(ctx, id)
		s := ex.Stats()
		return err == nil && s.Started >= 2 && !s.Healthy && in.State == task.Pending && in.Attempts == 0
	})
}
