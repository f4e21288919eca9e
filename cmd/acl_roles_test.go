package cmd

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/leatdev/leat/app"
	"github.com/leatdev/leat/internal/rdb"
	"github.com/leatdev/leat/internal/tools/redistest"
	"github.com/leatdev/leat/stream"
	"github.com/leatdev/leat/task"
	"github.com/redis/go-redis/v9"
)

// documentedUser returns the rules docs/configuration.md gives user ("ACL SETUSER user on
// >PASSWORD RULES..."), its key and channel patterns moved from the prefix
// leat to prefix: the tests create the users exactly as documented.
func documentedUser(t *testing.T, user, prefix string) []string {
	t.Helper()
	readme, err := os.ReadFile("../docs/configuration.md")
	if err != nil {
		t.Fatal(err)
	}
	head := "ACL SETUSER " + user + " on >PASSWORD "
	for _, line := range strings.Split(string(readme), "\n") {
		if rest, ok := strings.CutPrefix(line, head); ok {
			rules := strings.Fields(rest)
			for i, r := range rules {
				rules[i] = strings.Replace(r, "leat:", prefix+":", 1)
			}
			return rules
		}
	}
	t.Fatalf("docs/configuration.md has no line starting with %q", head)
	return nil
}

// as returns s with the Redis URL of the user docs/configuration.md documents as user.
func (s shop) as(t *testing.T, user string) shop {
	t.Helper()
	s.global = slices.Clone(s.global)
	s.global[1] = redistest.User(t, documentedUser(t, user, s.global[3])...)
	return s
}

// roleQueues is a program with full access running task queues "jobs" (no
// retries, and opts) and "keyed": a task's result is "done:" and its
// payload; payload "fail" fails, "block" runs until cancelled.
type roleQueues struct {
	jobs  *task.Queue[string, string]
	keyed *task.Queue[string, string]
}

func startRoleQueues(t *testing.T, s shop, opts ...task.Option) *roleQueues {
	t.Helper()
	a, err := app.New(app.Config{Name: "shop", RedisURL: s.global[1], KeyPrefix: s.global[3],
		Logger:       slog.New(slog.NewTextHandler(io.Discard, nil)),
		WebhookAllow: []string{"127.0.0.1"}}) // the tests' endpoints listen on loopback
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	handler := func(ctx context.Context, tk *task.Task[string]) (string, error) {
		switch tk.Payload {
		case "fail":
			return "", errors.New("failed on purpose")
		case "block":
			<-ctx.Done()
			return "", ctx.Err()
		}
		return "done:" + tk.Payload, nil
	}
	r := &roleQueues{}
	r.jobs, err = task.Handle(a, "jobs", handler, append(opts, task.MaxRetries(0), task.Grace(time.Second))...)
	if err == nil {
		r.keyed, err = task.Handle(a, "keyed", handler, task.Keyed(), task.Grace(time.Second))
	}
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	ran := make(chan error, 1)
	go func() { ran <- a.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-ran; err != nil {
			t.Errorf("app: %v", err)
		}
	})
	redistest.Eventually(t, 10*time.Second, "both queues registered", func() bool {
		n, _ := s.client.HLen(context.Background(), s.keys.TaskQueues()).Result()
		return n == 2
	})
	return r
}

// refused reports whether msg is Redis refusing a command to the user: a
// command or key not allowed (NOPERM), or, in a Lua script, a command or a
// key not allowed.
func refused(msg string) bool {
	return strings.Contains(msg, "NOPERM") || strings.Contains(msg, "can't run this command") ||
		strings.Contains(msg, "can't access at least one of the keys")
}

// wantDenied fails unless r is a refusal of the Redis server to the user.
func wantDenied(t *testing.T, what string, r result) {
	t.Helper()
	if r.status == 0 || !refused(r.stderr) {
		t.Errorf("%s: %+v, want a permission error", what, r)
	}
}

// wantNoPerm fails unless err is a refusal of the Redis server to the user.
func wantNoPerm(t *testing.T, what string, err error) {
	t.Helper()
	if err == nil || !refused(err.Error()) {
		t.Errorf("%s: %v, want a permission error", what, err)
	}
}

// userClient returns a client of the user in s's Redis URL.
func userClient(t *testing.T, s shop) *redis.Client {
	t.Helper()
	opt, err := redis.ParseURL(s.global[1])
	if err != nil {
		t.Fatal(err)
	}
	c := redis.NewClient(opt)
	t.Cleanup(func() { c.Close() })
	return c
}

// The producer docs/configuration.md documents sends, enqueues with every enqueue option
// and reads statuses and results, and may do nothing else: no pause,
// resume, rate, concurrency, cancel, requeue or delete, no write to a
// task's hash, a registry, a lock or a lease. On the key layout before the
// enqueue script took only the keys it writes, no such user could enqueue:
// the common KEYS of the task scripts are refused to it.
func TestProducerACL(t *testing.T) {
	t.Parallel()
	s := newShop(t)
	ctx := context.Background()
	hooks := make(chan string, 4)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		hooks <- string(b)
	}))
	defer srv.Close()
	q := startRoleQueues(t, s, task.Priorities("high", "low"))
	// The stream is registered by a program that may write the registry.
	if r := run(t, (&ticksApp{}).setup, "", s.args("send", "ticks", `{"key":"k0","n":0}`)...); r.status != 0 {
		t.Fatalf("send by the app: %+v", r)
	}
	p := s.as(t, "leat-producer")
	// Queue "jobs" records its events: the producer's enqueues write them
	// (it may read the live settings and write the events stream only).
	if err := rdb.SetEvents(ctx, s.client, s.keys.TaskConfig("jobs"), 100); err != nil {
		t.Fatal(err)
	}

	if r := run(t, nil, "", p.args("send", "ticks", `{"key":"k1","n":1}`)...); r.status != 0 || r.stderr != "" {
		t.Fatalf("send: %+v", r)
	}
	if r := run(t, nil, ticks(20), p.args("sendmany", "ticks", "-")...); r.status != 0 || r.stderr != "" {
		t.Fatalf("sendmany: %+v", r)
	}

	enqueue := func(args ...string) string {
		t.Helper()
		r := run(t, nil, "", p.args(append([]string{"--webhook-allow", "127.0.0.1", "enqueue"}, args...)...)...)
		if r.status != 0 || r.stderr != "" {
			t.Fatalf("enqueue %s: %+v", args, r)
		}
		return strings.TrimSpace(r.stdout)
	}
	chosen := enqueue("--id", "chosen", "--priority", "low", "--unique", "1m", "--header", "tenant=a",
		"--webhook", srv.URL, "--retention", "1h", "--timeout", "10s", "--max-retries", "1", "jobs", `"a"`)
	delayed := enqueue("--delay", "300ms", "--unique", "1m", "--unique-key", "u1", "jobs", `"b"`)
	keyed := enqueue("--key", "k1", "keyed", `"c"`)
	if chosen != "chosen" {
		t.Fatalf("enqueued %q, want the chosen ID", chosen)
	}
	if evs, err := rdb.ReadEvents(ctx, s.client, s.keys.TaskEvents("jobs"), "0", 100, -1); err != nil || len(evs) == 0 ||
		evs[0].Task != "chosen" || evs[0].State != "pending" || evs[0].Prev != "" {
		t.Fatalf("events after the producer's enqueue: %+v, %v", evs, err)
	}
	if err := rdb.SetEvents(ctx, s.client, s.keys.TaskConfig("jobs"), 0); err != nil { // the live settings as they were
		t.Fatal(err)
	}
	// A duplicate of a task that cannot have run yet (a success releases
	// its unique key) answers the existing task.
	later := enqueue("--delay", "1h", "--unique", "1m", "--unique-key", "u2", "jobs", `"d"`)
	if r := run(t, nil, "", p.args("enqueue", "--unique", "1m", "--unique-key", "u2", "jobs", `"d2"`)...); strings.TrimSpace(r.stdout) != later || !strings.Contains(r.stderr, "duplicate") {
		t.Fatalf("a duplicate unique key: %+v, want the existing task %s", r, later)
	}
	// A program declaring the stream and a queue itself, as a producer's
	// would: its first send and enqueue find them registered.
	pa, err := app.New(app.Config{Name: "shop", RedisURL: p.global[1], KeyPrefix: p.global[3],
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer pa.Close()
	st, err := stream.Declare[tick](pa, "ticks", stream.KeyField("key"), stream.Partitions(4))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Send(ctx, tick{Key: "k2", N: 2}); err != nil {
		t.Fatalf("a program's send: %v", err)
	}
	// Routing is still checked against the registered definition.
	pa2, err := app.New(app.Config{Name: "shop", RedisURL: p.global[1], KeyPrefix: p.global[3],
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer pa2.Close()
	wide, err := stream.Declare[tick](pa2, "ticks", stream.KeyField("key"), stream.Partitions(8))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := wide.Send(ctx, tick{Key: "k2", N: 3}); !errors.Is(err, stream.ErrConflict) {
		t.Errorf("a send with other routing: %v, want ErrConflict", err)
	}
	pq, err := task.Declare[string, string](pa, "keyed", task.Keyed())
	if err != nil {
		t.Fatal(err)
	}
	byProgram, err := pq.Enqueue(ctx, "d", task.Key("k1"), task.WithRetention(time.Hour))
	if err != nil {
		t.Fatalf("a program's enqueue: %v", err)
	}
	if got, err := pq.Result(ctx, byProgram); err != nil || got != "done:d" {
		t.Fatalf("a program's result: %q, %v", got, err)
	}
	other, err := task.Declare[string, string](pa, "other")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := other.Enqueue(ctx, "e"); err == nil || !strings.Contains(err.Error(), "not registered yet") {
		t.Errorf("enqueue into a queue no worker registered: %v, want refused", err)
	}

	for id, want := range map[string]string{chosen: "done:a", delayed: "done:b", keyed: "done:c"} {
		if r := run(t, nil, "", p.args("tasks", "wait", id)...); r.status != 0 || !strings.Contains(r.stdout, want) {
			t.Fatalf("wait %s: %+v", id, r)
		}
		if r := run(t, nil, "", p.args("tasks", "show", id)...); r.status != 0 || !strings.Contains(r.stdout, "succeeded") {
			t.Fatalf("show %s: %+v", id, r)
		}
		if r := run(t, nil, "", p.args("tasks", "follow", id)...); r.status != 0 || !strings.Contains(r.stdout, want) {
			t.Fatalf("follow %s: %+v", id, r)
		}
	}
	select {
	case body := <-hooks:
		if !strings.Contains(body, chosen) || !strings.Contains(body, "done:a") {
			t.Fatalf("webhook body %s", body)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("no webhook")
	}
	if n := s.total(t, "ticks", 4); n != 23 {
		t.Errorf("%d entries in the stream, want 23", n)
	}
	// The producer's entries are written as the app's are (the registered
	// entry codec applies): their fields are the same.
	fields := map[string]bool{}
	for part := range 4 {
		for _, e := range s.client.XRange(ctx, s.keys.Partition("ticks", part), "-", "+").Val() {
			var names []string
			for k := range e.Values {
				names = append(names, k)
			}
			slices.Sort(names)
			fields[strings.Join(names, ",")] = true
		}
	}
	if len(fields) != 1 {
		t.Errorf("entries with fields %v, want one layout", fields)
	}
	if in, err := q.jobs.Info(ctx, chosen); err != nil || in.Priority != "low" || in.Headers["tenant"] != "a" || in.MaxRetries != 1 {
		t.Fatalf("the chosen task as a program reads it: %+v, %v", in, err)
	}

	for _, args := range [][]string{
		{"tasks", "pause", "jobs"}, {"tasks", "resume", "jobs"}, {"tasks", "rate", "jobs", "5/1s"},
		{"tasks", "rate", "jobs", "default"}, {"tasks", "concurrency", "jobs", "3"}, {"tasks", "global-concurrency", "jobs", "2"},
		{"tasks", "cancel", chosen}, {"tasks", "requeue", chosen}, {"tasks", "delete", chosen},
		{"tasks", "requeue", "--all", "jobs"}, {"tasks", "delete", "--all", "jobs"},
	} {
		wantDenied(t, strings.Join(args, " "), run(t, nil, "", p.args(args...)...))
	}
	if m := s.client.HGetAll(ctx, s.keys.TaskConfig("jobs")).Val(); len(m) != 0 {
		t.Errorf("live settings %v after the producer's refused commands, want none", m)
	}
	if in, err := q.jobs.Info(ctx, chosen); err != nil || in.State != task.Succeeded {
		t.Errorf("the chosen task after the producer's refused commands: %+v, %v", in, err)
	}

	c := userClient(t, p)
	h := s.keys.TaskPrefix("jobs") + chosen
	wantNoPerm(t, "HSET a task's hash", c.HSet(ctx, h, "s", "pending").Err())
	wantNoPerm(t, "HSET a task's hash from a script", c.Eval(ctx, "return redis.call('HSET', ARGV[1], 's', 'pending')", nil, h).Err())
	wantNoPerm(t, "DEL a task's hash", c.Del(ctx, h).Err())
	wantNoPerm(t, "HSET the live settings", c.HSet(ctx, s.keys.TaskConfig("jobs"), rdb.PausedField, "1").Err())
	wantNoPerm(t, "HSET the queue registry", c.HSet(ctx, s.keys.TaskQueues(), "jobs", "{}").Err())
	wantNoPerm(t, "HSET the stream registry", c.HSet(ctx, s.keys.Registry(), "ticks", "{}").Err())
	wantNoPerm(t, "SET a partition lock", c.Set(ctx, s.keys.Lock("ticks", "count", 0), "x", 0).Err())
	wantNoPerm(t, "SET a queue's lease", c.Set(ctx, s.keys.LeaderOf(rdb.TaskLease("jobs")), "x", 0).Err())
	wantNoPerm(t, "SET over the ready stream", c.Set(ctx, s.keys.TaskStream("jobs", 0), "x", 0).Err())
	wantNoPerm(t, "XREADGROUP the ready stream", c.XReadGroup(ctx, &redis.XReadGroupArgs{
		Group: rdb.TaskGroup, Consumer: "p", Streams: []string{s.keys.TaskStream("jobs", 0), ">"}, Count: 1}).Err())
	wantNoPerm(t, "PUBLISH a cancellation", c.Publish(ctx, s.keys.TaskCancel("jobs"), chosen).Err())
	// A staged hash renamed onto an existing task is refused by RENAMENX
	// itself: the task is left as it was.
	stage := s.keys.TaskStagePrefix("jobs") + chosen
	if err := c.HSet(ctx, stage, "s", "pending").Err(); err != nil {
		t.Fatal(err)
	}
	if ok, err := c.RenameNX(ctx, stage, h).Result(); ok || err != nil {
		t.Errorf("RENAMENX onto an existing task: %v, %v, want refused", ok, err)
	}
	wantNoPerm(t, "RENAMENX a task's hash away", c.RenameNX(ctx, h, stage+"x").Err())
	if st := s.client.HGet(ctx, h, "s").Val(); st != "succeeded" {
		t.Errorf("the task's state %q after the producer's writes, want succeeded", st)
	}
	// The common KEYS of the task scripts, which enqueue.lua was given
	// before, name keys the producer may not write (the dead set, the
	// live settings, the task hashes): Redis refuses any EVAL given them.
	wantNoPerm(t, "EVAL given the task scripts' common KEYS", c.Eval(ctx, "return 1", rdb.Keys(s.keys, "jobs")).Err())
}

// The operator docs/configuration.md documents inspects, lists, shows, pauses and resumes,
// sets and clears the live rate and concurrency, cancels, requeues and
// deletes tasks, and cannot run as a worker: it may not read a queue's group,
// run the fetch script, take a lock or a lease, join a queue's workers or
// write a registry.
func TestOperatorACL(t *testing.T) {
	t.Parallel()
	s := newShop(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	q := startRoleQueues(t, s)
	if r := run(t, (&ticksApp{}).setup, "", s.args("send", "ticks", `{"key":"k0","n":0}`)...); r.status != 0 {
		t.Fatalf("send by the app: %+v", r)
	}
	o := s.as(t, "leat-operator")
	tasks := func(args ...string) result {
		t.Helper()
		r := run(t, nil, "", o.args(append([]string{"tasks"}, args...)...)...)
		if r.status != 0 || r.stderr != "" {
			t.Fatalf("tasks %s: %+v", args, r)
		}
		return r
	}

	ok, err := q.jobs.Enqueue(ctx, "ok")
	if err != nil {
		t.Fatal(err)
	}
	failed, err := q.jobs.Enqueue(ctx, "fail")
	if err != nil {
		t.Fatal(err)
	}
	blocked, err := q.jobs.Enqueue(ctx, "block")
	if err != nil {
		t.Fatal(err)
	}
	if in, err := q.jobs.Wait(ctx, failed); err != nil || in.State != task.Dead {
		t.Fatalf("failed task: %+v, %v", in, err)
	}
	if _, err := q.jobs.Wait(ctx, ok); err != nil {
		t.Fatal(err)
	}
	redistest.Eventually(t, 10*time.Second, "the blocking task running", func() bool {
		in, err := q.jobs.Info(ctx, blocked)
		return err == nil && in.State == task.Active
	})

	for _, args := range [][]string{{"inspect"}, {"inspect", "ticks"}, {"inspect", "--json"}} {
		if r := run(t, nil, "", o.args(args...)...); r.status != 0 || r.stderr != "" {
			t.Fatalf("%s: %+v", args, r)
		}
	}
	tasks()
	if r := tasks("list", "--state", "dead", "jobs"); !strings.Contains(r.stdout, failed) {
		t.Fatalf("dead tasks: %+v", r)
	}
	if r := tasks("show", ok); !strings.Contains(r.stdout, "done:ok") {
		t.Fatalf("show: %+v", r)
	}
	tasks("pause", "jobs")
	if paused, _, err := q.jobs.Paused(ctx); err != nil || !paused {
		t.Fatalf("paused: %v, %v", paused, err)
	}
	waiting, err := q.jobs.Enqueue(ctx, "w")
	if err != nil {
		t.Fatal(err)
	}
	if in, err := q.jobs.Info(ctx, waiting); err != nil || in.State != task.Pending {
		t.Fatalf("a task enqueued while paused: %+v, %v", in, err)
	}
	tasks("resume", "jobs")
	if in, err := q.jobs.Wait(ctx, waiting); err != nil || in.State != task.Succeeded {
		t.Fatalf("the task after the resume: %+v, %v", in, err)
	}

	if r := tasks("cancel", blocked); !strings.Contains(r.stdout, "was active") {
		t.Fatalf("cancel: %+v", r)
	}
	if in, err := q.jobs.Wait(ctx, blocked); err != nil || in.State != task.Cancelled {
		t.Fatalf("cancelled task: %+v, %v", in, err)
	}

	tasks("rate", "jobs", "100/1s")
	if r, live, err := q.jobs.LiveRate(ctx); err != nil || !live || r.N != 100 || r.Window != time.Second {
		t.Fatalf("live rate %+v %v, %v", r, live, err)
	}
	tasks("rate", "jobs", "default")
	tasks("concurrency", "jobs", "3")
	if v := s.client.HGet(ctx, s.keys.TaskConfig("jobs"), rdb.ConcurrencyField).Val(); v != "3" {
		t.Fatalf("live concurrency %q, want 3", v)
	}
	tasks("concurrency", "jobs", "default")
	if r := tasks("global-concurrency", "jobs", "2"); !strings.Contains(r.stdout, "at most 2 tasks running at once over all workers") {
		t.Fatalf("global-concurrency: %+v", r)
	}
	if n, err := q.jobs.GlobalConcurrency(ctx); err != nil || n != 2 {
		t.Fatalf("global concurrency %d, %v, want 2", n, err)
	}
	if r := tasks("global-concurrency", "jobs", "none"); !strings.Contains(r.stdout, "no cap over all workers") {
		t.Fatalf("global-concurrency none: %+v", r)
	}
	if m := s.client.HGetAll(ctx, s.keys.TaskConfig("jobs")).Val(); len(m) != 0 {
		t.Fatalf("live settings %v, want none left", m)
	}

	// requeue runs the operator's requeue args and waits until the dead
	// task has died again.
	requeue := func(args ...string) result {
		t.Helper()
		before, err := q.jobs.Info(ctx, failed)
		if err != nil {
			t.Fatal(err)
		}
		r := tasks(append([]string{"requeue"}, args...)...)
		redistest.Eventually(t, 10*time.Second, "the requeued task dead again", func() bool {
			in, err := q.jobs.Info(ctx, failed)
			return err == nil && in.State == task.Dead && in.FinishedAt.After(before.FinishedAt)
		})
		return r
	}
	requeue(failed)
	tasks("delete", ok)
	if _, err := q.jobs.Info(ctx, ok); !errors.Is(err, task.ErrNotFound) {
		t.Fatalf("deleted task: %v", err)
	}
	if r := requeue("--all", "jobs"); !strings.Contains(r.stdout, "requeued 1 dead task") {
		t.Fatalf("requeue --all: %+v", r)
	}
	tasks("delete", "--all", "jobs")
	if _, err := q.jobs.Info(ctx, failed); !errors.Is(err, task.ErrNotFound) {
		t.Fatalf("dead task after delete --all: %v", err)
	}

	c := userClient(t, o)
	wantNoPerm(t, "XREADGROUP a ready stream", c.XReadGroup(ctx, &redis.XReadGroupArgs{
		Group: rdb.TaskGroup, Consumer: "o", Streams: []string{s.keys.TaskStream("jobs", 0), ">"}, Count: 1}).Err())
	_, err = rdb.FetchTasks(ctx, c, rdb.Keys(s.keys, "jobs"), "o", rdb.Limits{}, rdb.NewCall(), []int{1, 1}, 1)
	wantNoPerm(t, "the fetch script", err)
	wantNoPerm(t, "a fetch memo", c.Set(ctx, s.keys.TaskFetchedPrefix("jobs")+"o:0", "x", 0).Err())
	wantNoPerm(t, "ZADD the queue's workers", c.ZAdd(ctx, s.keys.TaskWorkers("jobs"), redis.Z{Score: 1, Member: "o"}).Err())
	wantNoPerm(t, "SET a partition lock", c.Set(ctx, s.keys.Lock("ticks", "count", 0), "x", 0).Err())
	wantNoPerm(t, "SET a queue's lease", c.Set(ctx, s.keys.LeaderOf(rdb.TaskLease("jobs")), "x", 0).Err())
	wantNoPerm(t, "SET the app's lease", c.Set(ctx, s.keys.Leader(), "x", 0).Err())
	wantNoPerm(t, "HSET the queue registry", c.HSet(ctx, s.keys.TaskQueues(), "jobs", "{}").Err())
	wantNoPerm(t, "HSET the stream registry", c.HSet(ctx, s.keys.Registry(), "ticks", "{}").Err())
	wantNoPerm(t, "XADD to a partition", c.XAdd(ctx, &redis.XAddArgs{Stream: s.keys.Partition("ticks", 0), Values: []any{"k", "v"}}).Err())
}
