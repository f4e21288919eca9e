package task_test

import (
	"context"
	"fmt"
	"log/slog"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/leatdev/leat/app"
	"github.com/leatdev/leat/internal/rdb"
	"github.com/leatdev/leat/internal/tools/redistest"
	"github.com/leatdev/leat/task"
	"github.com/redis/go-redis/v9"
)

// An idle queue costs each of its workers one blocking read per 5 seconds
// (idleBlock), and no fetch script beside it: after a blocking read that
// found nothing, the next one goes out at once (an entry added meanwhile is
// returned by it at once). A task enqueued then runs at once, and a stop
// interrupts the read (CLIENT UNBLOCK) rather than wait for its end.
func TestIdleQueueCost(t *testing.T) {
	e := newEnv(t)
	c, name := namedClient(t, e.prefix)
	a, err := app.New(app.Config{Name: "shop", Client: c, KeyPrefix: e.prefix, WorkerID: "w1", Logger: testLogger()})
	if err != nil {
		t.Fatal(err)
	}
	q, err := task.Handle(a, "idle", func(ctx context.Context, tk *task.Task[int]) (int, error) { return tk.Payload, nil })
	if err != nil {
		t.Fatal(err)
	}
	stopWorker := e.run(a)
	ctx := ctxT(t)
	id, err := q.Enqueue(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := q.Result(ctx, id); err != nil {
		t.Fatal(err)
	}
	blocked := func() bool { return blockedIn(t, e.client, name, "xreadgroup") > 0 }
	redistest.Eventually(t, 10*time.Second, "idle: a blocking read that found nothing", blocked)

	var mu sync.Mutex
	reads, fetches := 0, 0 // blocking reads, and fetch scripts taking ready tasks
	u, err := url.Parse(redistest.URL(t))
	if err != nil {
		t.Fatal(err)
	}
	stop := redistest.Monitor(t, u.Host, func(line string) {
		if !strings.Contains(line, e.prefix+":") || strings.Contains(line, " lua]") {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		switch {
		case strings.Contains(line, `"xreadgroup"`) && strings.Contains(line, `"block"`):
			reads++
		case strings.Contains(line, `"evalsha"`) && strings.Contains(line, `"read"`):
			fetches++
		}
	})
	// The subject: what 2.5s with nothing to do costs.
	time.Sleep(2500 * time.Millisecond)
	stop()
	mu.Lock()
	r, f := reads, fetches
	mu.Unlock()
	if r > 2 || f > 0 {
		t.Errorf("idle for 2.5s: %d blocking reads and %d fetch scripts, want a read per fetcher at most (5s each) and no script", r, f)
	}
	t.Logf("idle for 2.5s: %d blocking reads, %d fetch scripts", r, f)

	id, err = q.Enqueue(ctx, 2)
	if err != nil {
		t.Fatal(err)
	}
	if res, err := q.Result(ctx, id); err != nil || res != 2 {
		t.Fatalf("a task enqueued while idle: %v %v", res, err)
	}
	redistest.Eventually(t, 10*time.Second, "a blocking read again", blocked)
	stopsWithin(t, stopWorker, 2*time.Second, "its blocking reads (5s) were not interrupted")
}

// stopsWithin calls stop and fails t unless it returned nil within d.
func stopsWithin(t *testing.T, stop func() error, d time.Duration, why string) {
	t.Helper()
	stopped := make(chan error, 1)
	go func() { stopped <- stop() }()
	select {
	case err := <-stopped:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(d):
		t.Fatalf("the worker did not stop within %s: %s", d, why)
	}
}

// A Redis user that may not run CLIENT UNBLOCK (the common +@all
// -@dangerous) still runs the queues' tasks: their idle fetchers block 500ms
// at a time, so a stop still returns soon, and one warning, however many
// queues, says what to grant.
func TestIdleQueueWithoutClientUnblock(t *testing.T) {
	t.Parallel()
	prefix := redistest.Prefix(t)
	admin, _ := redistest.Client(t)
	name := "idle-" + prefix
	url := redistest.User(t, "+@all", "-@dangerous", "~"+prefix+":*", "&*") + "?client_name=" + name
	var logs redistest.Log
	a, err := app.New(app.Config{Name: "shop", RedisURL: url, KeyPrefix: prefix, WorkerID: "w1",
		Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelWarn}))})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	q, err := task.Handle(a, "idle", func(ctx context.Context, tk *task.Task[int]) (int, error) { return tk.Payload, nil })
	if err != nil {
		t.Fatal(err)
	}
	if _, err := task.Handle(a, "other", func(ctx context.Context, tk *task.Task[int]) (int, error) { return 0, nil }); err != nil {
		t.Fatal(err)
	}
	stopWorker := (&env{t: t}).run(a)
	for n := range 2 {
		id, err := q.Enqueue(ctxT(t), n)
		if err != nil {
			t.Fatal(err)
		}
		if res, err := q.Result(ctxT(t), id); err != nil || res != n {
			t.Fatalf("task %d: %v %v", n, res, err)
		}
		redistest.Eventually(t, 10*time.Second, "idle: a blocking read", func() bool { return blockedIn(t, admin, name, "xreadgroup") > 0 })
	}
	stopsWithin(t, stopWorker, 2*time.Second, "its blocking reads could not be interrupted but should last 500ms")
	if n := strings.Count(logs.String(), "may not run a command that interrupts blocking reads"); n != 1 ||
		!strings.Contains(logs.String(), `command="CLIENT UNBLOCK"`) || !strings.Contains(logs.String(), "grant=+client|unblock") {
		t.Errorf("%d warnings about CLIENT UNBLOCK, want 1: %s", n, logs.String())
	}
}

// The task queues of an App share its idle cost: one blocking read for all
// of them (one blocked connection, at most one read per 5s), one wait on
// the wake lists of those it leads and one subscription to all their
// channels, where each queue had a blocked connection for its read, one
// for its leader's wait and one for its subscription. A task enqueued on any of them
// while they wait is read at once, and a stop interrupts the shared read.
func TestIdleQueuesShareOneReadAndSubscription(t *testing.T) {
	e := newEnv(t)
	opt, err := redis.ParseURL(redistest.URL(t))
	if err != nil {
		t.Fatal(err)
	}
	name := "idle-" + strings.ReplaceAll(e.prefix, ":", "-")
	opt.ClientName = name
	c := redis.NewClient(opt)
	defer c.Close()
	a, err := app.New(app.Config{Name: "shop", Client: c, KeyPrefix: e.prefix, WorkerID: "w1", Logger: testLogger()})
	if err != nil {
		t.Fatal(err)
	}
	const queues = 6
	qs := make([]*task.Queue[int, int], queues)
	for i := range qs {
		if qs[i], err = task.Handle(a, fmt.Sprintf("q%d", i), func(ctx context.Context, tk *task.Task[int]) (int, error) {
			return tk.Payload, nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	stopWorker := e.run(a)
	ctx := ctxT(t)
	// The queues turn idle one after the other: each one waiting joins the
	// read in flight.
	for i, q := range qs {
		id, err := q.Enqueue(ctx, i)
		if err != nil {
			t.Fatal(err)
		}
		if res, err := q.Result(ctx, id); err != nil || res != i {
			t.Fatalf("queue %d: %v %v", i, res, err)
		}
	}
	// blocked and subscribed connections of the worker, and the channels
	// of the subscribed ones
	clients := func() (blocked, waking, subscribed, channels int) {
		list, err := e.client.ClientList(ctx).Result()
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(list, "\n") {
			if !strings.Contains(line, " name="+name+" ") {
				continue
			}
			for _, f := range strings.Fields(line) {
				switch {
				case f == "cmd=xreadgroup" && strings.Contains(line, " flags=b "):
					blocked++
				case f == "cmd=blpop" && strings.Contains(line, " flags=b "):
					waking++
				case strings.HasPrefix(f, "sub="):
					if n, _ := strconv.Atoi(f[len("sub="):]); n > 0 {
						subscribed++
						channels += n
					}
				}
			}
		}
		return blocked, waking, subscribed, channels
	}
	redistest.Eventually(t, 10*time.Second, "one read, one wait on the wake lists and one subscription to every queue's channel", func() bool {
		b, w, s, ch := clients()
		return b == 1 && w == 1 && s == 1 && ch == queues
	})
	// The worker leads every queue: the one wait covers each wake list.
	ks := rdb.NewKeySpace(e.prefix, "shop")
	for i := range qs {
		list := ks.TaskWake(fmt.Sprintf("q%d", i))
		if err := e.client.LPush(ctx, list, "1").Err(); err != nil {
			t.Fatal(err)
		}
		redistest.Eventually(t, 3*time.Second, "the leader's wait taking the wake of queue "+strconv.Itoa(i), func() bool {
			return e.client.LLen(ctx, list).Val() == 0
		})
	}

	var mu sync.Mutex
	reads := 0
	u, err := url.Parse(redistest.URL(t))
	if err != nil {
		t.Fatal(err)
	}
	stop := redistest.Monitor(t, u.Host, func(line string) {
		if strings.Contains(line, e.prefix+":") && !strings.Contains(line, " lua]") &&
			strings.Contains(line, `"xreadgroup"`) && strings.Contains(line, `"block"`) {
			mu.Lock()
			reads++
			mu.Unlock()
		}
	})
	// The subject: what 2.5s with nothing to do costs.
	time.Sleep(2500 * time.Millisecond)
	stop()
	mu.Lock()
	r := reads
	mu.Unlock()
	if r > 1 {
		t.Errorf("%d queues idle for 2.5s: %d blocking reads, want one at most (5s each, for all)", queues, r)
	}
	if b, w, s, ch := clients(); b != 1 || w != 1 || s != 1 || ch != queues {
		t.Errorf("idle: %d connections blocked in a read and %d in a wait, %d subscribed (to %d channels), want 1, 1, 1 (to %d)", b, w, s, ch, queues)
	}

	// Each queue in turn, while all wait, within 3s: a task enqueued runs
	// well before the shared read's 5s would end, and a delayed one, the
	// push to the wake list waking its leader (the one wait), well before
	// the 5s after which an idle leader looks anyway.
	within := func(i int, what string, opts ...task.EnqueueOption) {
		t.Helper()
		id, err := qs[i].Enqueue(ctx, i, opts...)
		if err != nil {
			t.Fatal(err)
		}
		wctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		defer cancel()
		if res, err := qs[i].Result(wctx, id); err != nil || res != i {
			t.Fatalf("queue %d, %s: %v %v", i, what, res, err)
		}
	}
	for i := range qs {
		within(i, "a task delayed 200ms", task.Delay(200*time.Millisecond))
	}
	for i := range qs {
		within(i, "a task enqueued while every queue waited")
	}
	redistest.Eventually(t, 10*time.Second, "the queues waiting again in one read, and the leaders in one wait", func() bool {
		b, w, _, _ := clients()
		return b == 1 && w == 1
	})
	stopsWithin(t, stopWorker, 2*time.Second, "the shared read (5s) was not interrupted")
}

// A concurrency lowered while the queue is idle holds for the tasks that
// end the wait: the waiting fetcher, which reserved the slots free before,
// waits again for fewer, so a burst never runs more tasks at once than the
// new concurrency.
func TestLoweredConcurrencyWhileIdle(t *testing.T) {
	e := newEnv(t)
	var logs redistest.Log
	a, err := app.New(app.Config{Name: "shop", Client: e.client, KeyPrefix: e.prefix, WorkerID: "w1",
		Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	running, most := 0, 0
	q, err := task.Handle(a, "lowered", func(ctx context.Context, tk *task.Task[int]) (int, error) {
		mu.Lock()
		running++
		most = max(most, running)
		mu.Unlock()
		time.Sleep(20 * time.Millisecond) // work that lasts: tasks run at once overlap

		mu.Lock()
		running--
		mu.Unlock()
		return tk.Payload, nil
	}, task.Concurrency(4))
	if err != nil {
		t.Fatal(err)
	}
	e.run(a)
	ctx := ctxT(t)
	id, err := q.Enqueue(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := q.Result(ctx, id); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	most = 0
	mu.Unlock()
	if err := q.SetConcurrency(ctx, 1); err != nil {
		t.Fatal(err)
	}
	redistest.Eventually(t, 10*time.Second, "the worker applying the concurrency set", func() bool {
		return strings.Contains(logs.String(), "task concurrency changed")
	})
	ids, err := q.EnqueueMany(ctx, []int{1, 2, 3, 4, 5, 6, 7, 8})
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range ids {
		if _, err := q.Result(ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if most != 1 {
		t.Errorf("%d tasks ran at once after the concurrency was lowered to 1", most)
	}
}

// Idle queues outlive a Redis restart: the shared read, the leaders' wait
// and the subscription fail with the server and come back with it, so a
// task enqueued on each queue afterwards runs, and a running task is still
// cancelled through the subscription.
func TestIdleQueuesAfterRedisRestart(t *testing.T) {
	t.Parallel()
	srv := redistest.StartPersistent(t)
	e := &env{t: t, client: srv.Client(t), prefix: "restart"}
	var logs redistest.Log
	a, err := app.New(app.Config{Name: "shop", Client: e.client, KeyPrefix: e.prefix, WorkerID: "w1", LeaderLease: time.Second,
		Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelWarn}))})
	if err != nil {
		t.Fatal(err)
	}
	started := make(chan string, 10)
	const queues = 3
	qs := make([]*task.Queue[int, int], queues)
	for i := range qs {
		if qs[i], err = task.Handle(a, fmt.Sprintf("q%d", i), func(ctx context.Context, tk *task.Task[int]) (int, error) {
			if tk.Payload < 0 {
				started <- tk.ID
				<-ctx.Done()
				return 0, context.Cause(ctx)
			}
			return tk.Payload, nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	e.run(a)
	ctx := ctxT(t)
	for i, q := range qs {
		id, err := q.Enqueue(ctx, i)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := q.Result(ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	redistest.Eventually(t, 10*time.Second, "the queues waiting in one read, and the leaders in one wait", func() bool {
		return redistest.Blocked(t, e.client, "xreadgroup") == 1 && redistest.Blocked(t, e.client, "blpop") == 1
	})
	logged := len(logs.String())
	srv.Shutdown(t)
	redistest.Eventually(t, 10*time.Second, "the worker seeing the server gone (a read, wait or subscription failed)", func() bool {
		return strings.Contains(logs.String()[logged:], " failed")
	})
	srv.Relaunch(t)
	redistest.Eventually(t, 20*time.Second, "the queues waiting in one read again, and the leaders in one wait", func() bool {
		return redistest.Blocked(t, e.client, "xreadgroup") == 1 && redistest.Blocked(t, e.client, "blpop") == 1
	})
	for i, q := range qs {
		id, err := q.Enqueue(ctx, 10+i)
		if err != nil {
			t.Fatal(err)
		}
		if res, err := q.Result(ctx, id); err != nil || res != 10+i {
			t.Fatalf("queue %d after the restart: %v %v", i, res, err)
		}
	}
	id, err := qs[1].Enqueue(ctx, -1)
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-started:
	case <-ctx.Done():
		t.Fatal("the long task never started")
	}
	if _, err := qs[1].Cancel(ctx, id); err != nil {
		t.Fatal(err)
	}
	in, err := qs[1].Wait(ctx, id)
	if err != nil || in.State != task.Cancelled {
		t.Fatalf("the cancelled task: %+v %v", in, err)
	}
}

// namedClient returns a client of the shared server whose connections carry
// a name of their own, derived from prefix, and that name.
func namedClient(t *testing.T, prefix string) (*redis.Client, string) {
	t.Helper()
	opt, err := redis.ParseURL(redistest.URL(t))
	if err != nil {
		t.Fatal(err)
	}
	opt.ClientName = "idle-" + prefix
	c := redis.NewClient(opt)
	t.Cleanup(func() { c.Close() })
	return c, opt.ClientName
}

// blockedIn returns how many connections named name are blocked in cmd (in
// lower case), as c's server lists them.
func blockedIn(t *testing.T, c *redis.Client, name, cmd string) int {
	t.Helper()
	list, err := c.ClientList(t.Context()).Result()
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, l := range strings.Split(list, "\n") {
		if strings.Contains(l, " name="+name+" ") && strings.Contains(l, " cmd="+cmd+" ") && strings.Contains(l, " flags=b ") {
			n++
		}
	}
	return n
}
