package cmd

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/leatdev/leat/app"
	"github.com/leatdev/leat/inspect"
	"github.com/leatdev/leat/internal/tools/redistest"
	"github.com/leatdev/leat/task"
)

type greet struct {
	Name string `json:"name"`
}

// runTaskWorker runs a worker of app "shop" with queue "greet": it fails
// payloads named "fail" (no retries) and blocks on those named "block".
func runTaskWorker(t *testing.T, s shop) {
	t.Helper()
	a, err := app.New(app.Config{Name: "shop", Client: s.client, KeyPrefix: s.keys.Prefix,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), LeaderLease: time.Second,
		WebhookAllow: []string{"127.0.0.1"}}) // the tests' endpoints listen on loopback
	if err != nil {
		t.Fatal(err)
	}
	_, err = task.Handle(a, "greet", func(ctx context.Context, tk *task.Task[greet]) (string, error) {
		switch tk.Payload.Name {
		case "fail":
			return "", errors.New("no such person")
		case "block":
			<-ctx.Done()
			return "", ctx.Err()
		}
		return "hello " + tk.Payload.Name, nil
	}, task.MaxRetries(0), task.Priorities("high", "low"))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = a.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	// The worker registers the queue's definition.
	redistest.Eventually(t, 10*time.Second, "the queue registered", func() bool {
		return s.client.HExists(context.Background(), s.keys.TaskQueues(), "greet").Val()
	})
}

func TestTasksCLI(t *testing.T) {
	t.Parallel()
	s := newShop(t)
	runTaskWorker(t, s)

	if r := run(t, nil, "", s.args("enqueue", "--header", "tenant", "greet", `{"name":"ada"}`)...); r.status != 2 || !strings.Contains(r.stderr, "want NAME=VALUE") {
		t.Fatalf("enqueue --header without a value: %+v", r)
	}
	if r := run(t, nil, "", s.args("enqueue", "--header", "t=\xff", "greet", `{"name":"ada"}`)...); r.status == 0 || !strings.Contains(r.stderr, "not UTF-8") {
		t.Fatalf("enqueue --header of bytes that are not UTF-8: %+v", r)
	}
	r := run(t, nil, "", s.args("enqueue", "--priority", "high", "--header", "tenant=acme", "--header", "tracestate=a=1,b=2", "greet", `{"name":"ada"}`)...)
	if r.status != 0 || r.stderr != "" {
		t.Fatalf("enqueue: %+v", r)
	}
	id := strings.TrimSpace(r.stdout)
	r = run(t, nil, "", s.args("tasks", "wait", id)...)
	if r.status != 0 || r.stdout != "\"hello ada\"\n" {
		t.Fatalf("wait: %+v", r)
	}
	r = run(t, nil, "", s.args("tasks", "show", "--json", id)...)
	var in task.Info
	if err := json.Unmarshal([]byte(r.stdout), &in); err != nil || in.State != task.Succeeded || in.Priority != "high" ||
		len(in.Headers) != 2 || in.Headers["tenant"] != "acme" || in.Headers["tracestate"] != "a=1,b=2" {
		t.Fatalf("show: %+v %v", r, err)
	}
	r = run(t, nil, "", s.args("tasks", "show", id)...)
	if r.status != 0 || !strings.Contains(r.stdout, "succeeded") || !strings.Contains(r.stdout, "header tenant      acme\n") {
		t.Fatalf("show: %+v", r)
	}

	// A file of JSON lines; a bad line enqueues nothing.
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.jsonl")
	os.WriteFile(bad, []byte("{\"name\":\"a\"}\n{nope\n"), 0o644)
	if r := run(t, nil, "", s.args("enqueue", "greet", "--file", bad)...); r.status != 2 || r.stderr != "line 2: not valid JSON\n" {
		t.Fatalf("bad line: %+v", r)
	}
	r = run(t, nil, "{\"name\":\"b\"}\n\n{\"name\":\"fail\"}\n", s.args("enqueue", "greet", "--file", "-")...)
	ids := strings.Fields(r.stdout)
	if r.status != 0 || len(ids) != 2 {
		t.Fatalf("enqueue --file: %+v", r)
	}
	r = run(t, nil, "", s.args("tasks", "wait", ids[1])...)
	wantFailure(t, r, 1, "is dead", "no such person")

	// The dead tasks of a queue, latest first, as a table and as JSON.
	r = run(t, nil, "", s.args("tasks", "list", "greet")...)
	if r.status != 0 || !strings.Contains(r.stdout, ids[1]) || !strings.Contains(r.stdout, "no such person") {
		t.Fatalf("tasks list: %+v", r)
	}
	checkAligned(t, r.stdout, "ID ")
	r = run(t, nil, "", s.args("tasks", "list", "--json", "--limit", "1", "greet")...)
	var dead []task.Info
	if err := json.Unmarshal([]byte(r.stdout), &dead); err != nil || len(dead) != 1 || dead[0].ID != ids[1] || dead[0].State != task.Dead {
		t.Fatalf("tasks list --json: %+v %v", r, err)
	}
	if r := run(t, nil, "", s.args("tasks", "list", "--state", "scheduled", "greet")...); r.status != 0 || r.stdout != "no scheduled tasks\n" {
		t.Fatalf("tasks list --state scheduled: %+v", r)
	}
	wantFailure(t, run(t, nil, "", s.args("tasks", "list", "--state", "lost", "greet")...), 2, `unknown listing "lost"`)
	wantFailure(t, run(t, nil, "", s.args("tasks", "list", "--limit", "101", "greet")...), 2, "limit 101: from 1 to 100")
	wantFailure(t, run(t, nil, "", s.args("tasks", "list", "nope")...), 2, "unknown queue")
	// Flags may follow the arguments.
	r = run(t, nil, "", s.args("tasks", "list", "greet", "--json", "--limit", "1")...)
	if err := json.Unmarshal([]byte(r.stdout), &dead); r.status != 0 || err != nil || len(dead) != 1 {
		t.Fatalf("tasks list with flags after the queue: %+v %v", r, err)
	}

	// Requeue the dead one (it dies again), then all dead ones.
	r = run(t, nil, "", s.args("tasks", "requeue", ids[1])...)
	if r.status != 0 {
		t.Fatalf("requeue: %+v", r)
	}
	wantFailure(t, run(t, nil, "", s.args("tasks", "wait", ids[1])...), 1, "is dead")
	r = run(t, nil, "", s.args("tasks", "requeue", "--all", "greet")...)
	if r.status != 0 || !strings.Contains(r.stdout, "requeued 1 dead task") {
		t.Fatalf("requeue --all: %+v", r)
	}
	wantFailure(t, run(t, nil, "", s.args("tasks", "wait", ids[1])...), 1, "is dead")

	// Cancel a running task and a scheduled one.
	r = run(t, nil, "", s.args("enqueue", "greet", `{"name":"block"}`)...)
	blocked := strings.TrimSpace(r.stdout)
	redistest.Eventually(t, 10*time.Second, "the task active", func() bool {
		return strings.Contains(run(t, nil, "", s.args("tasks", "show", blocked)...).stdout, "active")
	})
	r = run(t, nil, "", s.args("tasks", "cancel", blocked)...)
	if r.status != 0 || !strings.Contains(r.stdout, "was active") {
		t.Fatalf("cancel: %+v", r)
	}
	wantFailure(t, run(t, nil, "", s.args("tasks", "wait", blocked)...), 1, "is cancelled")
	r = run(t, nil, "", s.args("enqueue", "--delay", "1h", "greet", `{"name":"later"}`)...)
	later := strings.TrimSpace(r.stdout)
	if r := run(t, nil, "", s.args("tasks", "cancel", later)...); !strings.Contains(r.stdout, "was scheduled, cancelled") {
		t.Fatalf("cancel: %+v", r)
	}
	wantFailure(t, run(t, nil, "", s.args("tasks", "cancel", later)...), 2, "cancelled")

	// Duplicates print the existing ID.
	r = run(t, nil, "", s.args("enqueue", "--id", "g-1", "greet", `{"name":"x"}`)...)
	r2 := run(t, nil, "", s.args("enqueue", "--id", "g-1", "greet", `{"name":"y"}`)...)
	if r.stdout != "g-1\n" || r2.stdout != "g-1\n" || r2.status != 0 || !strings.Contains(r2.stderr, "duplicate") {
		t.Fatalf("duplicate: %+v %+v", r, r2)
	}

	// Counts per state.
	run(t, nil, "", s.args("tasks", "wait", "g-1")...)
	r = run(t, nil, "", s.args("tasks", "--json")...)
	var rows []queueCounts
	if err := json.Unmarshal([]byte(r.stdout), &rows); err != nil || len(rows) != 1 {
		t.Fatalf("tasks: %+v %v", r, err)
	}
	want := map[task.State]int64{task.Succeeded: 3, task.Dead: 1, task.Cancelled: 2}
	for _, st := range task.States {
		if rows[0].Counts[st] != want[st] {
			t.Fatalf("counts %v, want %v", rows[0].Counts, want)
		}
	}
	r = run(t, nil, "", s.args("tasks")...)
	if r.status != 0 || !strings.HasPrefix(r.stdout, "QUEUE  PENDING  SCHEDULED  ACTIVE") || !strings.Contains(r.stdout, "greet") {
		t.Fatalf("tasks: %+v", r)
	}
	checkAligned(t, r.stdout, "QUEUE ") // as inspect's tables: left-aligned under their headers

	// Bad input, refused before anything is written: text a worker would
	// decode with replacements, and values given that a task cannot take
	// (never the queue's default instead).
	wantFailure(t, run(t, nil, "", s.args("enqueue", "greet", `{nope`)...), 2, "not valid JSON")
	wantFailure(t, run(t, nil, "", s.args("enqueue", "greet", `{"name":"a\ud800"}`)...), 2, `\ud800 is half of a UTF-16 surrogate pair`)
	wantFailure(t, run(t, nil, "", s.args("enqueue", "greet", `{"name":"a","name":"b"}`)...), 2, `field "name" appears twice`)
	lossy := filepath.Join(dir, "lossy.jsonl")
	os.WriteFile(lossy, []byte("{\"name\":\"a\"}\n{\"name\":\"\xff\"}\n"), 0o644)
	if r := run(t, nil, "", s.args("enqueue", "greet", "--file", lossy)...); r.status != 2 || r.stderr != "line 2: invalid UTF-8 at byte 10\n" {
		t.Fatalf("a line that is not UTF-8: %+v", r)
	}
	wantFailure(t, run(t, nil, "", s.args("enqueue", "--max-retries", "-1", "greet", `{}`)...), 2, "max retries -1 out of range")
	wantFailure(t, run(t, nil, "", s.args("enqueue", "--timeout", "0s", "greet", `{}`)...), 2, "timeout 0s out of range")
	wantFailure(t, run(t, nil, "", s.args("enqueue", "--retention", "2558000h", "greet", `{}`)...), 2, "retention 2558000h0m0s out of range")
	wantFailure(t, run(t, nil, "", s.args("enqueue", "--unique", "0s", "greet", `{}`)...), 2, "unique TTL 0s must be positive")
	wantFailure(t, run(t, nil, "", s.args("enqueue", "nosuch", `{}`)...), 2, `unknown queue "nosuch" in the registry of app "shop" (its queues: greet;`)
	wantFailure(t, run(t, nil, "", s.args("enqueue", "--priority", "urgent", "greet", `{}`)...), 2, "unknown priority")
	wantFailure(t, run(t, nil, "", s.args("tasks", "show", "missing")...), 2, "not found")
	r = run(t, nil, "", s.args("tasks", "concurrency", "greet", "3")...)
	if r.status != 0 {
		t.Fatalf("concurrency: %+v", r)
	}
	wantFailure(t, run(t, nil, "", s.args("tasks", "concurrency", "greet", "0")...), 2, "at least 1")
	wantFailure(t, run(t, nil, "", s.args("tasks", "concurrency", "greet", "1000000000")...), 2, "above the maximum of 1000")
	if r := run(t, nil, "", s.args("tasks", "concurrency", "greet", "default")...); r.status != 0 || r.stdout != "greet: each worker's own concurrency (applied within a second)\n" {
		t.Fatalf("concurrency default: %+v", r)
	}
	if v := s.client.HExists(context.Background(), s.keys.TaskConfig("greet"), "concurrency").Val(); v {
		t.Fatal("the live concurrency is still set")
	}

	// The rate limit over all workers, set live, lifted, back to the program's.
	for _, step := range []struct{ args, out string }{
		{"", "greet: no rate limit (the program's Rate option)\n"},
		{"100/1s", "greet: at most 100 tasks started per 1s over all workers (set live)\n"},
		{"", "greet: at most 100 tasks started per 1s over all workers (set live)\n"},
		{"1/250ms", "greet: at most 1 task started per 250ms over all workers (set live)\n"},
		{"none", "greet: no rate limit (set live)\n"},
		{"default", "greet: no rate limit (the program's Rate option)\n"},
	} {
		args := []string{"tasks", "rate", "greet"}
		if step.args != "" {
			args = append(args, step.args)
		}
		if r := run(t, nil, "", s.args(args...)...); r.status != 0 || r.stdout != step.out {
			t.Errorf("tasks rate greet %s: %+v, want %q", step.args, r, step.out)
		}
	}
	wantFailure(t, run(t, nil, "", s.args("tasks", "rate", "greet", "0/1s")...), 2, "at least 1")
	wantFailure(t, run(t, nil, "", s.args("tasks", "rate", "greet", "5/0s")...), 2, "at least 1ms")
	wantFailure(t, run(t, nil, "", s.args("tasks", "rate", "greet", "fast")...), 2, "want N/DURATION")
	wantFailure(t, run(t, nil, "", s.args("tasks", "rate", "nosuch", "none")...), 2, "unknown queue")
}

// leat inspect lists the task queues with their tasks per state, read from
// the queues' counters.
func TestInspectTaskQueues(t *testing.T) {
	t.Parallel()
	s := newShop(t)
	runTaskWorker(t, s)
	for _, name := range []string{"ada", "fail"} {
		r := run(t, nil, "", s.args("enqueue", "greet", fmt.Sprintf(`{"name":%q}`, name))...)
		if r.status != 0 {
			t.Fatalf("enqueue: %+v", r)
		}
		if r := run(t, nil, "", s.args("tasks", "wait", strings.TrimSpace(r.stdout))...); name == "ada" && r.status != 0 {
			t.Fatalf("wait: %+v", r)
		}
	}
	r := run(t, nil, "", s.args("inspect", "--json")...)
	var o inspect.Overview
	if err := json.Unmarshal([]byte(r.stdout), &o); err != nil || r.status != 0 {
		t.Fatalf("inspect --json: %+v %v", r, err)
	}
	if len(o.Queues) != 1 || o.Queues[0].Name != "greet" || o.Queues[0].Counts["succeeded"] != 1 ||
		o.Queues[0].Counts["failed"]+o.Queues[0].Counts["dead"] != 1 {
		t.Fatalf("queues %+v", o.Queues)
	}
	// The worker runs no processor: it is listed for its task queue, alive.
	if len(o.Workers) != 1 || len(o.Workers[0].Queues) != 1 || o.Workers[0].Queues[0].Queue != "greet" || !o.Workers[0].Queues[0].Alive ||
		len(o.Workers[0].Executors) != 0 {
		t.Fatalf("workers %+v: want one, alive on greet", o.Workers)
	}
	worker := o.Workers[0].ID
	r = run(t, nil, "", s.args("inspect")...)
	if r.status != 0 || !strings.Contains(r.stdout, "QUEUE") || !strings.Contains(r.stdout, "SUCCEEDED") || !strings.Contains(r.stdout, "greet") ||
		!strings.Contains(r.stdout, "OLDEST READY") || !strings.Contains(r.stdout, worker) || strings.Contains(r.stdout, "EXECUTOR") {
		t.Fatalf("inspect: %+v", r)
	}
	checkAligned(t, r.stdout, "TASK WORKER")

	// inspect queue: the same counts, both tasks finished, nothing waits.
	r = run(t, nil, "", s.args("inspect", "--json", "queue", "greet")...)
	var q inspect.QueueReport
	if err := json.Unmarshal([]byte(r.stdout), &q); err != nil || r.status != 0 {
		t.Fatalf("inspect --json queue greet: %+v %v", r, err)
	}
	if q.Name != "greet" || q.App != "shop" || q.Counts["succeeded"] != 1 || len(q.Levels) != 2 || q.Levels[1].Name != "low" ||
		q.Throughput.LastMinute.Finished != 2 || q.Throughput.LastFiveMinute.Finished != 2 || q.OldestReadyAgeMS != nil {
		t.Fatalf("queue report %+v", q)
	}
	if len(q.Workers) != 1 || q.Workers[0].Worker != worker || !q.Workers[0].Alive || q.Workers[0].Running != 0 || q.Leader != worker {
		t.Fatalf("queue workers %+v, leader %q: want %s alive, running nothing, leading the queue", q.Workers, q.Leader, worker)
	}
	r = run(t, nil, "", s.args("inspect", "queue", "greet")...)
	if r.status != 0 || !strings.Contains(r.stdout, "task queue greet of app shop") || !strings.Contains(r.stdout, "last 5 minutes") ||
		!strings.Contains(r.stdout, "leader: "+worker+" (") {
		t.Fatalf("inspect queue greet: %+v", r)
	}
	checkAligned(t, r.stdout, "LEVEL  PRIORITY")
	checkAligned(t, r.stdout, "WORKER ")
	wantFailure(t, run(t, nil, "", s.args("inspect", "queue", "nope")...), 2, `unknown task queue "nope": app "shop" has greet`)
	wantFailure(t, run(t, nil, "", s.args("inspect", "greet", "x")...), 2, "want STREAM or queue QUEUE")
}

// "leat tasks" on an app without task queues (a mistyped app name or
// prefix, say) says so and names what it looked under, rather than printing
// an empty table; --json prints an empty list.
func TestTasksWithoutQueues(t *testing.T) {
	t.Parallel()
	s := newShop(t)
	r := run(t, nil, "", s.args("tasks")...)
	want := fmt.Sprintf("no task queues in the registry of app %q (key prefix %q)\n", "shop", s.keys.Prefix)
	if r.status != 0 || r.stdout != want {
		t.Fatalf("tasks: %+v, want stdout %q", r, want)
	}
	if r := run(t, nil, "", s.args("tasks", "--json")...); r.status != 0 || r.stdout != "[]\n" {
		t.Fatalf("tasks --json: %+v", r)
	}
}

// leat tasks pause and resume: a paused queue shows as paused in tasks and
// inspect, its tasks wait, and a resume runs them.
func TestPauseResumeCLI(t *testing.T) {
	t.Parallel()
	s := newShop(t)
	runTaskWorker(t, s)
	r := run(t, nil, "", s.args("tasks", "pause", "greet")...)
	if r.status != 0 || !strings.HasPrefix(r.stdout, "greet: paused since ") {
		t.Fatalf("pause: %+v", r)
	}
	r = run(t, nil, "", s.args("enqueue", "greet", `{"name":"ada"}`)...)
	if r.status != 0 || !strings.Contains(r.stderr, "queue greet is paused since ") {
		t.Fatalf("enqueue while paused: %+v", r)
	}
	id := strings.TrimSpace(r.stdout)
	if r := run(t, nil, "", s.args("tasks")...); r.status != 0 || !strings.Contains(r.stdout, "greet (paused)") {
		t.Fatalf("tasks: %+v", r)
	}
	r = run(t, nil, "", s.args("tasks", "--json")...)
	var rows []queueCounts
	if err := json.Unmarshal([]byte(r.stdout), &rows); err != nil || len(rows) != 1 || rows[0].PausedAt == nil {
		t.Fatalf("tasks --json (%v): %+v", err, r)
	}
	if r := run(t, nil, "", s.args("inspect")...); r.status != 0 || !strings.Contains(r.stdout, "greet (paused)") {
		t.Fatalf("inspect: %+v", r)
	}
	if r := run(t, nil, "", s.args("inspect", "queue", "greet")...); r.status != 0 || !strings.Contains(r.stdout, "paused since ") {
		t.Fatalf("inspect queue: %+v", r)
	}
	r = run(t, nil, "", s.args("inspect", "--json", "queue", "greet")...)
	var rep struct {
		PausedAt *time.Time `json:"paused_at"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil || rep.PausedAt == nil {
		t.Fatalf("inspect --json queue (%v): %+v", err, r)
	}
	if r := run(t, nil, "", s.args("tasks", "show", id)...); r.status != 0 || !strings.Contains(r.stdout, "pending") {
		t.Fatalf("show while paused: %+v", r)
	}

	if r := run(t, nil, "", s.args("tasks", "resume", "greet")...); r.status != 0 || r.stdout != "greet: resumed\n" {
		t.Fatalf("resume: %+v", r)
	}
	if r := run(t, nil, "", s.args("tasks", "wait", id)...); r.status != 0 || !strings.Contains(r.stdout, "hello ada") {
		t.Fatalf("wait after resume: %+v", r)
	}
	if r := run(t, nil, "", s.args("enqueue", "greet", `{"name":"bo"}`)...); r.status != 0 || r.stderr != "" {
		t.Fatalf("enqueue after resume: %+v", r)
	}
	r = run(t, nil, "", s.args("inspect", "--json", "queue", "greet")...)
	rep.PausedAt = nil
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil || rep.PausedAt != nil {
		t.Fatalf("inspect --json queue after resume (%v): %+v", err, r)
	}
	wantFailure(t, run(t, nil, "", s.args("tasks", "pause", "nosuch")...), 2, "unknown queue")
	wantFailure(t, run(t, nil, "", s.args("tasks", "resume")...), 2, "QUEUE")
}

// leat tasks delete removes an ended task, or every dead task of a queue;
// a task that has not ended is refused.
func TestDeleteCLI(t *testing.T) {
	t.Parallel()
	s := newShop(t)
	runTaskWorker(t, s)
	enqueue := func(args ...string) string {
		t.Helper()
		r := run(t, nil, "", s.args(append([]string{"enqueue"}, args...)...)...)
		if r.status != 0 {
			t.Fatalf("enqueue: %+v", r)
		}
		return strings.TrimSpace(r.stdout)
	}
	ok, dead := enqueue("greet", `{"name":"ada"}`), enqueue("greet", `{"name":"fail"}`)
	later := enqueue("--delay", "1h", "greet", `{"name":"later"}`)
	run(t, nil, "", s.args("tasks", "wait", ok)...)
	run(t, nil, "", s.args("tasks", "wait", dead)...)

	wantFailure(t, run(t, nil, "", s.args("tasks", "delete", later)...), 2, "is scheduled, not ended: cancel it first")
	if r := run(t, nil, "", s.args("tasks", "delete", ok)...); r.status != 0 || r.stdout != ok+": was succeeded, deleted\n" {
		t.Fatalf("delete: %+v", r)
	}
	wantFailure(t, run(t, nil, "", s.args("tasks", "show", ok)...), 2, "not found")
	if r := run(t, nil, "", s.args("tasks", "delete", "--all", "greet")...); r.status != 0 || r.stdout != "deleted 1 dead task of greet\n" {
		t.Fatalf("delete --all: %+v", r)
	}
	wantFailure(t, run(t, nil, "", s.args("tasks", "show", dead)...), 2, "not found")
	wantFailure(t, run(t, nil, "", s.args("tasks", "delete", "missing")...), 2, "not found")
	if r := run(t, nil, "", s.args("tasks", "show", later)...); r.status != 0 || !strings.Contains(r.stdout, "scheduled") {
		t.Fatalf("the scheduled task after the deletes: %+v", r)
	}
}

// leat inspect queue names a queue's rate limits, set live or not, its
// pause and its key settings.
func TestQueueReportLimits(t *testing.T) {
	at := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	r := &inspect.QueueReport{App: "shop", Time: at, Rate: &inspect.RateLimit{Tasks: 5, WindowMS: 400},
		KeyRate: &inspect.RateLimit{Tasks: 2, WindowMS: 60000}, KeyConcurrency: 3, MaxKeyBacklog: 100}
	r.Name, r.PausedAt = "mail", &at
	var b strings.Builder
	if err := writeQueueReport(&b, r); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"rate limits: at most 5 tasks per 400ms; 2 tasks of a key per 1m0s, over all workers",
		"paused since 2026-11-23T12:00:00Z", "keys: up to 3 tasks of a key at once; at most 100 tasks in a key's line"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, b.String())
		}
	}
	// A concurrency set live, a rate set live, then lifted live.
	r.Concurrency, r.ConcurrencyLive = 9, true
	b.Reset()
	if err := writeQueueReport(&b, r); err != nil {
		t.Fatal(err)
	}
	if want := "concurrency 9 per worker (set live)"; !strings.Contains(b.String(), want) {
		t.Errorf("report lacks %q:\n%s", want, b.String())
	}
	r.RateLive, r.KeyRate = true, nil
	for _, c := range []struct {
		rate *inspect.RateLimit
		want string
	}{
		{&inspect.RateLimit{Tasks: 7, WindowMS: 1000}, "rate limits: at most 7 tasks per 1s (set live), over all workers"},
		{nil, "rate limit lifted live (leat tasks rate mail default goes back to the workers' option)"},
	} {
		r.Rate = c.rate
		b.Reset()
		if err := writeQueueReport(&b, r); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(b.String(), c.want) {
			t.Errorf("report lacks %q:\n%s", c.want, b.String())
		}
	}
}

// The CLI embedded in a program that declares a queue with a payload type
// refuses payloads that type's handlers would not decode exactly, naming
// the line of a file before anything of it is enqueued; the standalone
// binary, which knows only the registry, refuses them by the schema there.
func TestEnqueueChecksDeclaredPayload(t *testing.T) {
	t.Parallel()
	s := newShop(t)
	runTaskWorker(t, s)
	setup := func(cfg app.Config) (*app.App, error) {
		a, err := app.New(cfg)
		if err != nil {
			return nil, err
		}
		_, err = task.Declare[greet, string](a, "greet", task.MaxRetries(0), task.Priorities("high", "low"))
		return a, err
	}
	wantFailure(t, run(t, setup, "", s.args("enqueue", "greet", `{"nmae":"ada"}`)...), 2, `payload 0: unknown field "nmae"`)
	wantFailure(t, run(t, setup, "", s.args("enqueue", "greet", `{"name":5}`)...), 2, `field "name": number does not fit (want a string)`)
	var lines strings.Builder
	for i := range 12_000 {
		if i == 11_000 {
			lines.WriteString(`{"name":"ada","age":36}` + "\n")
			continue
		}
		fmt.Fprintf(&lines, `{"name":"p%d"}`+"\n", i)
	}
	if r := run(t, setup, lines.String(), s.args("enqueue", "greet", "--file", "-")...); r.status != 2 || r.stderr != "line 11001: unknown field \"age\"\n" {
		t.Fatalf("a bad line after the first chunk: %+v", r)
	}
	if ks := s.client.Keys(context.Background(), s.keys.TaskPrefix("greet")+"*").Val(); len(ks) != 0 {
		t.Fatalf("refused enqueues wrote %d tasks", len(ks))
	}
	if r := run(t, setup, "", s.args("enqueue", "greet", `{"name":"ada"}`)...); r.status != 0 {
		t.Fatalf("a payload of the type: %+v", r)
	}
	if ks := s.client.Keys(context.Background(), s.keys.TaskPrefix("greet")+"*").Val(); len(ks) != 1 {
		t.Fatalf("%d tasks, want the one enqueued", len(ks))
	}
	// The standalone binary checks by the schema the worker recorded.
	wantFailure(t, run(t, nil, "", s.args("enqueue", "greet", `{"nmae":"ada"}`)...), 2, `payload 0: unknown field "nmae"; known: name`)
}
