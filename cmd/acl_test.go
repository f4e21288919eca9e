package cmd

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/leatdev/leat/app"
	"github.com/leatdev/leat/executor"
	"github.com/leatdev/leat/internal/rdb"
	"github.com/leatdev/leat/internal/tools/redistest"
	"github.com/leatdev/leat/middleware"
	"github.com/leatdev/leat/stream"
	"github.com/leatdev/leat/task"
)

// minimalACL is the ACL docs/configuration.md documents for a leat user, without its key
// and channel patterns: the commands a full run uses (workers with a
// rebalance, halts, quarantine, dead letters, reset, send, sendmany,
// inspect; processors with Dedup, RateLimit and a table; task queues run by an app
// and by a subprocess handler, with follow, webhooks, logs, cancel, a keyed
// queue with a rate per key, a dead bound and requeue), from INFO
// commandstats after aclScenario, aclMiddlewareScenario and aclTaskScenario
// (LEAT_MEASURE_ACL=1 go test -run TestMeasureACL ./cmd prints them).
// The commands Lua scripts may call but the scenarios need not reach
// (HMGET, PEXPIRE, ZREMRANGEBYSCORE, LPUSH, LREM, PTTL), UNWATCH (a
// transactional read after every lock was lost) and SELECT (a /db in the
// URL) are added by hand.
var minimalACL = []string{
	"+ping", "+hello", "+select", "+client|id", "+client|unblock", "+cluster|info", "+type",
	"+eval", "+evalsha", "+script|load", "+multi", "+exec", "+watch", "+unwatch", "+time",
	"+publish", "+subscribe",
	"+get", "+mget", "+set", "+del", "+exists", "+incr", "+incrby", "+pexpire", "+pttl", "+persist",
	"+hget", "+hmget", "+hgetall", "+hkeys", "+hexists", "+hset", "+hsetnx", "+hdel", "+hincrby", "+renamenx",
	"+lpush", "+rpush", "+lpop", "+lindex", "+llen", "+lrem", "+sadd", "+srem", "+blpop",
	"+zadd", "+zcard", "+zcount", "+zrange", "+zrangebyscore", "+zremrangebyscore", "+zremrangebyrank", "+zrem", "+zscore",
	"+xadd", "+xdel", "+xlen", "+xrange", "+xrevrange", "+xread", "+xreadgroup", "+xack", "+xpending", "+xtrim",
	"+xautoclaim", "+xclaim", "+xgroup|create", "+xgroup|setid", "+xgroup|delconsumer",
	"+xinfo|stream", "+xinfo|groups", "+xinfo|consumers",
}

// aclScenario runs the core commands of the CLI on s: send, sendmany, two
// workers with a rebalance, dead letters, reset, a quarantine, a halt, and
// inspect.
func aclScenario(t *testing.T, s shop) {
	t.Helper()
	if r := run(t, (&ticksApp{}).setup, "", s.args("send", "ticks", `{"key":"k1","n":-1}`)...); r.status != 0 {
		t.Fatalf("send: %+v", r)
	}
	ta := &ticksApp{fail: "k3"}
	w1 := start(t, ta.setup, s.quiet("worker", "--worker-id", "w1", "--on-error", "dead-letter", "--retries", "0")...)
	a := ta.waitApp(t, w1)
	waitUntil(t, w1, "w1 owns every partition", func() bool { return len(a.Executors()[0].Owned()) == 4 })
	if r := run(t, ta.setup, ticks(20), s.args("sendmany", "ticks", "-")...); r.status != 0 {
		t.Fatalf("sendmany: %+v", r)
	}
	ta2 := &ticksApp{fail: "k3"}
	w2 := start(t, ta2.setup, s.quiet("worker", "--worker-id", "w2", "--on-error", "dead-letter", "--retries", "0")...)
	waitUntil(t, w2, "two partitions each", func() bool {
		o := ownedBy(inspectStream(t, s, "ticks"))
		return o["w1"] == 2 && o["w2"] == 2
	})
	dead := s.keys.DeadLetter("ticks", "count")
	waitUntil(t, w1, "19 events counted, 2 dead-lettered", func() bool {
		return ta.tl.count()+ta2.tl.count() >= 19 && s.client.XLen(context.Background(), dead).Val() == 2
	})
	for _, w := range []*background{w1, w2} {
		if r := w.stop(t); r.status != 0 {
			t.Fatalf("worker: %+v", r)
		}
	}
	s.waitStopped(t)
	if r := run(t, nil, "", s.args("reset", "--yes", "ticks/count")...); r.status != 0 {
		t.Fatalf("reset: %+v", r)
	}
	tq := &ticksApp{fail: "k3"}
	wq := start(t, tq.setup, s.quiet("worker", "--worker-id", "wq", "--on-error", "quarantine")...)
	waitUntil(t, wq, "a quarantined partition", func() bool { return inspectStream(t, s, "ticks").Processors[0].Quarantined == 1 })
	if r := wq.stop(t); r.status != 0 {
		t.Fatalf("worker: %+v", r)
	}
	s.waitStopped(t)
	if r := run(t, nil, "", s.args("reset", "--yes", "ticks/count")...); r.status != 0 {
		t.Fatalf("reset: %+v", r)
	}
	th := &ticksApp{fail: "k3"}
	wh := start(t, th.setup, s.quiet("worker", "--worker-id", "wh")...)
	if r := wh.wait(t); r.status != exitFailure || !strings.Contains(r.stderr, "cannot count k3") {
		t.Fatalf("halted worker: %+v", r)
	}
	for _, args := range [][]string{{"inspect"}, {"inspect", "ticks"}, {"inspect", "--json"}} {
		if r := run(t, nil, "", s.args(args...)...); r.status != 0 || r.stderr != "" {
			t.Fatalf("%s: %+v", args, r)
		}
	}
}

// A user with exactly the minimal ACL and the app's key and channel patterns
// runs every core command, processors with middleware, and task queues.
func TestMinimalACL(t *testing.T) {
	t.Parallel()
	s := newShop(t)
	prefix := strings.TrimSuffix(s.keys.Prefix, ":")
	rules := append([]string{"~" + prefix + ":*", "&" + prefix + ":*"}, minimalACL...)
	s.global[1] = redistest.User(t, rules...)
	aclScenario(t, s)
	aclMiddlewareScenario(t, s)
	aclTaskScenario(t, s, s.global[3])
}

// TestMeasureACL prints the commands aclScenario runs, for minimalACL.
func TestMeasureACL(t *testing.T) {
	if os.Getenv("LEAT_MEASURE_ACL") == "" {
		t.Skip("set LEAT_MEASURE_ACL=1 to measure the commands leat runs")
	}
	srv := redistest.Start(t)
	s := shop{client: srv.Client(t), keys: rdb.NewKeySpace("leat", "shop"),
		global: []string{"--redis", srv.URL, "--prefix", "leat", "--app", "shop"}}
	aclScenario(t, s)
	aclMiddlewareScenario(t, s)
	aclTaskScenario(t, s, "leat")
	info := srv.Client(t).Info(context.Background(), "commandstats").Val()
	var cmds []string
	for _, line := range strings.Split(info, "\n") {
		if name, ok := strings.CutPrefix(line, "cmdstat_"); ok {
			name, _, _ = strings.Cut(name, ":")
			cmds = append(cmds, "+"+name)
		}
	}
	slices.Sort(cmds)
	t.Logf("%q", cmds)
}

// docs/configuration.md documents minimalACL as one ACL SETUSER line.
func TestMinimalACLDocumented(t *testing.T) {
	t.Parallel()
	readme, err := os.ReadFile("../docs/configuration.md")
	if err != nil {
		t.Fatal(err)
	}
	want := "ACL SETUSER leat on >PASSWORD resetchannels ~leat:* &leat:* " + strings.Join(minimalACL, " ")
	if !strings.Contains(string(readme), want) {
		t.Errorf("docs/configuration.md lacks the line\n%s", want)
	}
}

// mwApp is an app with stream "orders" whose processor "bill" runs Dedup
// (by partition key) and RateLimit, the middleware that keep state in
// Redis, and counts the events it sees per key, in a table too.
type mwApp struct {
	mu   sync.Mutex
	seen map[string]int
}

func (m *mwApp) setup(cfg app.Config) (*app.App, error) {
	cfg.Processing = cfg.Processing.Merge(executor.Options{
		LockExpiry: 2 * time.Second, ReadBlock: 200 * time.Millisecond, Grace: 2 * time.Second,
	})
	a, err := app.New(cfg)
	if err != nil {
		return nil, err
	}
	s, err := stream.Declare[tick](a, "orders", stream.KeyField("key"), stream.Partitions(2))
	var tbl *stream.Table[int]
	if err == nil {
		tbl, err = stream.DeclareTable[int](s, "bill", "seen")
	}
	if err == nil {
		err = app.Process(a, s, "bill", func(ctx context.Context, events *stream.Events[tick]) error {
			st := tbl.In(events)
			for e := range events.All() {
				m.mu.Lock()
				if m.seen == nil {
					m.seen = map[string]int{}
				}
				m.seen[e.Record.Key]++
				n := m.seen[e.Record.Key]
				m.mu.Unlock()
				if err := st.Set(e.Record.Key, n); err != nil {
					return err
				}
			}
			return nil
		}, app.Use(
			middleware.Dedup(middleware.DedupOptions{Key: func(e *middleware.Entry) string { return string(e.Key) }}),
			middleware.RateLimit(middleware.RateOptions{PerSecond: 1000, Burst: 10, PerKey: true}),
		))
	}
	if err != nil {
		a.Close()
		return nil, err
	}
	return a, nil
}

func (m *mwApp) counts() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return fmt.Sprint(m.seen)
}

// aclMiddlewareScenario runs a worker whose processor uses the middleware
// that keep state in Redis: a duplicate key is skipped.
func aclMiddlewareScenario(t *testing.T, s shop) {
	t.Helper()
	m := &mwApp{}
	for _, k := range []string{"k1", "k1", "k2"} {
		if r := run(t, m.setup, "", s.args("send", "orders", `{"key":"`+k+`"}`)...); r.status != 0 {
			t.Fatalf("send: %+v", r)
		}
	}
	w := start(t, m.setup, s.quiet("worker", "--worker-id", "wm")...)
	waitUntil(t, w, "every order acknowledged", func() bool {
		rep := inspectStream(t, s, "orders")
		if len(rep.Processors) == 0 {
			return false
		}
		p := rep.Processors[0]
		return p.Lag != nil && *p.Lag == 0 && p.Pending == 0 && p.Owned == 2
	})
	if got := m.counts(); got != "map[k1:1 k2:1]" {
		t.Errorf("processed %s, want the duplicate skipped", got)
	}
	if r := w.stop(t); r.status != 0 {
		t.Fatalf("worker: %+v", r)
	}
	s.waitStopped(t)
}

// aclHandler is a subprocess handler reporting progress and a partial
// result, writing a log line, and answering; a payload with "block" runs
// until cancelled.
const aclHandler = `echo '{"status":"ready"}'
while read -r line; do
  id=$(printf '%s' "$line" | sed 's/.*"task_id":"\([^"]*\)".*/\1/')
  case "$line" in *block*) sleep 60;; esac
  echo "working on $id" >&2
  printf '{"task_id":"%s","progress":{"done":1}}\n' "$id"
  printf '{"task_id":"%s","partial":"half"}\n' "$id"
  printf '{"task_id":"%s","result":"whole"}\n' "$id"
done
`

// aclTaskScenario runs the task queue end to end: an app declares a queue
// and enqueues; a worker runs a subprocess handler; the CLI enqueues with a
// webhook, follows progress and partial results, reads the task's log,
// cancels a running task, pauses and resumes the queue, and requeues.
func aclTaskScenario(t *testing.T, s shop, prefix string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	hooks := make(chan string, 4)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		hooks <- string(b)
	}))
	defer srv.Close()
	script := filepath.Join(t.TempDir(), "handler.sh")
	if err := os.WriteFile(script, []byte(aclHandler), 0o600); err != nil {
		t.Fatal(err)
	}
	a, err := app.New(app.Config{Name: "shop", RedisURL: s.global[1], KeyPrefix: prefix,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	q, err := task.Declare[json.RawMessage, json.RawMessage](a, "jobs")
	if err != nil {
		t.Fatal(err)
	}
	first, err := q.Enqueue(ctx, json.RawMessage(`{"n":1}`))
	if err != nil {
		t.Fatal(err)
	}
	w := start(t, nil, s.quiet("--webhook-allow", "127.0.0.1", "worker", "--worker-id", "wt", "--queue", "jobs", "--exec", "sh "+script, "--grace", "1s")...)
	if r := run(t, nil, "", s.args("tasks", "follow", first)...); r.status != 0 ||
		!strings.Contains(r.stdout, "half") || !strings.Contains(r.stdout, "whole") {
		t.Fatalf("follow: %+v", r)
	}
	r := run(t, nil, "", s.args("--webhook-allow", "127.0.0.1", "enqueue", "--webhook", srv.URL, "jobs", `{"n":2}`)...)
	if r.status != 0 {
		t.Fatalf("enqueue: %+v", r)
	}
	hooked := strings.TrimSpace(r.stdout)
	select {
	case body := <-hooks:
		if !strings.Contains(body, hooked) || !strings.Contains(body, "whole") {
			t.Fatalf("webhook body %s", body)
		}
	case <-ctx.Done():
		t.Fatal("no webhook")
	}
	waitUntil(t, w, "the delivery recorded and the log kept", func() bool {
		show := run(t, nil, "", s.args("tasks", "show", hooked)...)
		logs := run(t, nil, "", s.args("tasks", "logs", hooked)...)
		return strings.Contains(show.stdout, "delivered") && strings.Contains(logs.stdout, "working on "+hooked)
	})
	r = run(t, nil, "", s.args("enqueue", "jobs", `{"block":true}`)...)
	blocked := strings.TrimSpace(r.stdout)
	waitUntil(t, w, "the blocking task running", func() bool {
		return strings.Contains(run(t, nil, "", s.args("tasks", "show", blocked)...).stdout, "active")
	})
	// Published on the queue's cancel channel (a warning says when it is
	// not: the worker then reads the flag within a second).
	if r := run(t, nil, "", s.args("tasks", "cancel", blocked)...); r.status != 0 || !strings.Contains(r.stdout, "was active") || r.stderr != "" {
		t.Fatalf("cancel: %+v", r)
	}
	wantFailure(t, run(t, nil, "", s.args("tasks", "wait", blocked)...), 1, "is cancelled")
	// Paused, a task waits; resumed, it runs.
	if r := run(t, nil, "", s.args("tasks", "pause", "jobs")...); r.status != 0 || r.stderr != "" {
		t.Fatalf("pause: %+v", r)
	}
	r = run(t, nil, "", s.args("enqueue", "jobs", `{"n":3}`)...)
	waiting := strings.TrimSpace(r.stdout)
	if r := run(t, nil, "", s.args("tasks", "show", waiting)...); !strings.Contains(r.stdout, "pending") {
		t.Fatalf("show while paused: %+v", r)
	}
	if r := run(t, nil, "", s.args("tasks", "resume", "jobs")...); r.status != 0 || r.stderr != "" {
		t.Fatalf("resume: %+v", r)
	}
	if r := run(t, nil, "", s.args("tasks", "wait", waiting)...); r.status != 0 || !strings.Contains(r.stdout, "whole") {
		t.Fatalf("wait after the resume: %+v", r)
	}
	if r := w.stop(t); r.status != 0 {
		t.Fatalf("worker: %+v", r)
	}
	// Every outcome was recorded whole, the counts (finish.lua's last step)
	// included.
	if c, err := q.Counts(ctx); err != nil || c[task.Succeeded] != 3 || c[task.Cancelled] != 1 || c[task.Active] != 0 {
		t.Fatalf("counts %v (%v), want 3 succeeded and 1 cancelled", c, err)
	}

	// A keyed queue with a rate per key and a bound on dead tasks, run by
	// the app: tasks of a key in turn, the dead set trimmed, a dead task
	// requeued.
	keyed, err := task.Handle(a, "keyed", func(ctx context.Context, tk *task.Task[string]) (string, error) {
		if tk.Payload == "fail" {
			return "", errors.New("failed on purpose")
		}
		return tk.Payload, nil
	}, task.Keyed(), task.KeyRate(100, time.Second), task.MaxRetries(0), task.KeepDead(1, time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	runCtx, stopApp := context.WithCancel(ctx)
	ran := make(chan error, 1)
	go func() { ran <- a.Run(runCtx) }()
	defer func() {
		stopApp()
		if err := <-ran; err != nil {
			t.Errorf("app: %v", err)
		}
	}()
	var ids []string
	for _, p := range []string{"ok", "fail", "fail", "ok"} {
		id, err := keyed.Enqueue(ctx, p, task.Key("k1"))
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	// Tasks of a key run in order: once the last finished, all have.
	if in, err := keyed.Wait(ctx, ids[3]); err != nil || in.State != task.Succeeded {
		t.Fatalf("last task: %+v, %v", in, err)
	}
	if _, err := keyed.Info(ctx, ids[1]); !errors.Is(err, task.ErrNotFound) {
		t.Fatalf("the first dead task: %v, want it dropped by the dead bound", err)
	}
	if r := run(t, nil, "", s.args("tasks", "requeue", "--all", "keyed")...); r.status != 0 || !strings.Contains(r.stdout, "requeued 1 dead task") {
		t.Fatalf("requeue: %+v", r)
	}
	if in, err := keyed.Wait(ctx, ids[2]); err != nil || in.State != task.Dead {
		t.Fatalf("requeued task: %+v, %v", in, err)
	}
}

// A user that may not run a command of a task queue script is told the
// script, its commands and what to grant.
func TestACLTaskScriptDenied(t *testing.T) {
	t.Parallel()
	s := newShop(t)
	prefix := s.global[3]
	rules := append([]string{"~" + prefix + ":*", "&" + prefix + ":*"}, minimalACL...)
	a, err := app.New(app.Config{Name: "shop", RedisURL: redistest.User(t, append(rules, "-hincrby")...), KeyPrefix: prefix,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	q, err := task.Declare[string, string](a, "jobs")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err = q.Enqueue(ctx, "x")
	for _, want := range []string{"Lua script task_enqueue.lua calls ", "HINCRBY", "+hincrby"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("enqueue: %v, want it to mention %q", err, want)
		}
	}
}
