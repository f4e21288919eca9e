package task_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/leatdev/leat/app"
	"github.com/leatdev/leat/internal/tools/redistest"
	"github.com/leatdev/leat/task"
	"github.com/redis/go-redis/v9"
)

// A worker marks the tasks of entries its blocking read returned active in
// one script call. When that call's reply is lost (the connection broke,
// or the process stalled past the read timeout) go-redis sends it again:
// the second run finds the tasks already active for this worker and hands
// them out again, instead of acknowledging their entries as those of tasks
// no longer pending, which left each task active with no entry, never run
// and never reclaimed. The visibility timeout is long, so only that brings
// the task back within the test's deadline.
func TestFetchReplyLost(t *testing.T) {
	e := newEnv(t)
	ctx := ctxT(t)
	a, lose, arm, name := givenLoser(t, e)
	var ran atomic.Int32
	q, err := task.Handle(a, "jobs", func(ctx context.Context, tk *task.Task[job]) (out, error) {
		ran.Add(1)
		return out{Double: 2 * tk.Payload.N}, nil
	}, task.Visibility(5*time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	e.run(a)
	// The worker blocks on the empty queue: the task comes through its
	// blocking read, then the given-mode call.
	first, err := q.Enqueue(ctx, job{N: 1})
	if err != nil {
		t.Fatal(err)
	}
	redistest.Eventually(t, 10*time.Second, "the first task", func() bool { return ran.Load() == 1 })
	waitBlocked(t, e.client, name)
	arm.Store(true)
	id, err := q.Enqueue(ctx, job{N: 2})
	if err != nil {
		t.Fatal(err)
	}
	redistest.Eventually(t, 20*time.Second, "the task whose fetch reply was lost", func() bool {
		info, err := q.Info(ctx, id)
		return err == nil && info.State == task.Succeeded
	})
	if lose.Lost() != 1 {
		t.Fatalf("%d fetch replies lost, want 1", lose.Lost())
	}
	if n := ran.Load(); n != 2 {
		t.Fatalf("%d runs, want 2 (%s and %s once each)", n, first, id)
	}
}

// A worker takes tasks with a read in a script call when some are ready,
// else with a blocking XREADGROUP. When the reply of either is lost after
// Redis ran it (the link or the server failed in between), the tasks taken
// are active with the worker, or their entries pending with it, and nothing
// else would run them before the visibility timeout (five minutes here):
//   - a script read sent again by the worker after the error (go-redis
//     never sends it again, retries on or off: its reply is read raw)
//     hands out the tasks of its first run again, not the next ones;
//   - after a lost blocking read the worker takes the tasks of the entries
//     pending with it that it never took; when the read was shared by
//     several idle queues, each of them recovers, and reads again.
func TestLostFetchReplies(t *testing.T) {
	for _, tc := range []struct {
		name    string
		busy    bool // the task comes while another runs: a script read takes it
		retries int  // the app client's MaxRetries (-1: none)
		shared  bool // a second queue, idle, shares the blocking read
	}{
		{"blocking read", false, 0, false},
		{"blocking read shared by two queues", false, 0, true},
		{"script read, client retries on", true, 0, false},
		{"script read, client retries off", true, -1, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			ctx := ctxT(t)
			proxy := redistest.NewProxy(t, redistest.URL(t))
			opt, err := redis.ParseURL(proxy.URL())
			if err != nil {
				t.Fatal(err)
			}
			opt.MaxRetries = tc.retries
			opt.ClientName = "lost-" + e.prefix
			c := redis.NewClient(opt)
			t.Cleanup(func() { _ = c.Close() })
			a, err := app.New(app.Config{Name: "shop", Client: c, KeyPrefix: e.prefix, WorkerID: "w1", Logger: testLogger()})
			if err != nil {
				t.Fatal(err)
			}
			release := make(chan struct{})
			var mu sync.Mutex
			runs := map[string]int{}
			handler := func(ctx context.Context, tk *task.Task[job]) (out, error) {
				mu.Lock()
				runs[tk.ID]++
				mu.Unlock()
				if tk.Payload.N == 0 {
					<-release
				}
				return out{Double: 2 * tk.Payload.N}, nil
			}
			if _, err := task.Handle(a, "jobs", handler, task.Concurrency(1), task.Visibility(5*time.Minute)); err != nil {
				t.Fatal(err)
			}
			if tc.shared {
				if _, err := task.Handle(a, "more", handler, task.Visibility(5*time.Minute)); err != nil {
					t.Fatal(err)
				}
			}
			// Enqueued through a direct client: only the worker's link
			// goes through the proxy.
			direct, err := app.New(app.Config{Name: "shop", Client: e.client, KeyPrefix: e.prefix, WorkerID: "p", Logger: testLogger()})
			if err != nil {
				t.Fatal(err)
			}
			q, err := task.Declare[job, out](direct, "jobs")
			if err != nil {
				t.Fatal(err)
			}
			e.run(a)
			ids := []string{}
			if tc.busy {
				id, err := q.Enqueue(ctx, job{N: 0})
				if err != nil {
					t.Fatal(err)
				}
				ids = append(ids, id)
				redistest.Eventually(t, 10*time.Second, "the first task running", func() bool {
					mu.Lock()
					defer mu.Unlock()
					return runs[id] == 1
				})
			} else {
				close(release)
				waitBlocked(t, e.client, opt.ClientName)
			}
			marker := fmt.Sprintf("cut%d", time.Now().UnixNano())
			proxy.CutReplies([]byte(marker), 1)
			id, err := q.Enqueue(ctx, job{N: 1}, task.ID(marker))
			if err != nil {
				t.Fatal(err)
			}
			ids = append(ids, id)
			if tc.busy {
				close(release)
			}
			redistest.Eventually(t, 20*time.Second, "the task whose fetch reply was lost", func() bool {
				in, err := q.Info(ctx, id)
				return err == nil && in.State == task.Succeeded
			})
			if proxy.Cuts() != 1 {
				t.Fatalf("%d replies cut, want 1: the test lost no fetch reply", proxy.Cuts())
			}
			if tc.shared {
				// the other queue, whose wait the lost reply ended too
				more, err := task.Declare[job, out](direct, "more")
				if err != nil {
					t.Fatal(err)
				}
				id, err := more.Enqueue(ctx, job{N: 2})
				if err != nil {
					t.Fatal(err)
				}
				ids = append(ids, id)
				if res, err := more.Result(ctx, id); err != nil || res.Double != 4 {
					t.Fatalf("a task of the other queue after the lost reply: %v %v", res, err)
				}
			}
			mu.Lock()
			defer mu.Unlock()
			for _, id := range ids {
				if runs[id] != 1 {
					t.Errorf("task %s ran %d times, want 1", id, runs[id])
				}
			}
		})
	}
}

// waitBlocked waits until a connection named name (a worker's) is blocked
// in XREADGROUP: the next task enqueued reaches the worker through its
// blocking read.
func waitBlocked(t *testing.T, c *redis.Client, name string) {
	t.Helper()
	redistest.Eventually(t, 10*time.Second, "the worker's blocking read", func() bool {
		list, err := c.ClientList(context.Background()).Result()
		if err != nil {
			return false
		}
		for _, l := range strings.Split(list, "\n") {
			f := strings.Fields(l)
			if slices.Contains(f, "name="+name) && slices.Contains(f, "cmd=xreadgroup") && slices.Contains(f, "flags=b") {
				return true
			}
		}
		return false
	})
}

// A worker's two fetchers make script reads at once. When the reply of one
// is lost, the other may run a read of its own before the first is sent
// again: Redis keeps what each read took per slot of the worker, and the
// two are of different slots, so the first call sent again still hands out
// its own tasks. With one memo per worker, the other read replaced it (or
// deleted it, taking nothing), and the lost read's tasks stayed active with
// the worker, run by nobody before the visibility timeout (five minutes
// here). The race is not forced: replies of many reads are lost while both
// fetchers keep reading a backlog, which meets it most runs (it fails that
// way without the slots).
func TestLostReadRepliesBesideOtherReads(t *testing.T) {
	e := newEnv(t)
	ctx := ctxT(t)
	// The read-mode fetch call: "read" is its fourth argument.
	lose := &redistest.ReplyLoser{Match: []byte("$4\r\nread\r\n")}
	var reads atomic.Int32
	lose.Armed = func() bool { return reads.Add(1)%3 == 0 && lose.Lost() < 12 }
	q, runs := runLossy(t, e, lose, 8, func(job) time.Duration {
		return time.Millisecond // slots free one by one: both fetchers read
	})
	jobs := make([]job, 600)
	for i := range jobs {
		jobs[i] = job{N: i}
	}
	ids, err := q.EnqueueMany(ctx, jobs)
	if err != nil {
		t.Fatal(err)
	}
	runs.each(t, ids)
	if n := lose.Lost(); n < 12 {
		t.Fatalf("%d read replies lost, want 12", n)
	}
}

// Replies of every kind of fetch call, and of the calls recording outcomes,
// are lost while tasks come in bursts (a busy queue reads with script
// calls; an idle one with blocking reads, then a given call; a lost
// blocking read's entries are recovered with an own call), under a rate
// limit and through two pauses, and two fetchers take them: every task
// still runs once and succeeds, long before the visibility timeout (five
// minutes) would bring back one that a lost reply left behind.
func TestLostRepliesUnderLoad(t *testing.T) {
	for _, keyed := range []bool{false, true} {
		t.Run(map[bool]string{false: "unkeyed", true: "keyed"}[keyed], func(t *testing.T) {
			lostRepliesUnderLoad(t, keyed)
		})
	}
}

// lostRepliesUnderLoad is TestLostRepliesUnderLoad on two unkeyed queues,
// or on two keyed ones whose bursts each go to one of five keys (a key's
// tasks then also run one at a time, in order); the bursts alternate
// between the queues.
func lostRepliesUnderLoad(t *testing.T, keyed bool) {
	e := newEnv(t)
	ctx := ctxT(t)
	// The fetch calls by their mode (the fourth argument), the blocking
	// reads and the outcome calls (a success's outcome); one in 11 reads
	// and outcomes, one in 5 given calls and blocking reads, one in 2
	// recoveries is lost, eight of each at most: through the whole run, the
	// queues' pauses and their rate limit included.
	lose := &redistest.ReplyLoser{
		Match: []byte("$4\r\nread\r\n"),
		Also:  [][]byte{[]byte("$5\r\ngiven\r\n"), []byte("$3\r\nown\r\n"), []byte("xreadgroup"), []byte("$2\r\nok\r\n")},
	}
	var lmu sync.Mutex
	seen, armed := map[string]int{}, map[string]int{}
	lose.ArmedFor = func(m []byte) bool {
		lmu.Lock()
		defer lmu.Unlock()
		k := kind(m)
		seen[k]++
		every := map[string]int{kind(lose.Match): 11, kind(lose.Also[3]): 11, kind(lose.Also[1]): 2}[k] // recoveries are few
		if every == 0 {
			every = 5
		}
		if seen[k]%every != 0 || armed[k] >= 8 {
			return false
		}
		armed[k]++
		return true
	}
	// a rate limit that holds bursts back (fetches refused or cut short,
	// a blocking read's entries left pending beyond the budget)
	opts := []task.Option{task.Rate(40, 100*time.Millisecond)}
	if keyed {
		opts = append(opts, task.Keyed())
	}
	_, runs := runLossy(t, e, lose, 6, func(j job) time.Duration { return time.Duration(j.N%3) * time.Millisecond }, opts...)
	var ids []string
	for burst := range 40 {
		jobs := make([]job, 1+burst%7*5)
		for i := range jobs {
			jobs[i] = job{N: burst*100 + i}
		}
		var eo []task.EnqueueOption
		if keyed {
			eo = append(eo, task.Key(fmt.Sprint("k", burst%5)))
		}
		got, err := runs.qs[burst%2].EnqueueMany(ctx, jobs, eo...) // jobs, more
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, got...)
		if burst%4 != 0 {
			time.Sleep(60 * time.Millisecond) // the load's shape: a gap, idle fetchers block in reads
		}
		if burst == 10 || burst == 25 { // paused a while: fetches refused, given entries left pending
			for _, q := range runs.qs {
				if err := q.Pause(ctx); err != nil {
					t.Fatal(err)
				}
			}
			time.Sleep(150 * time.Millisecond) // the load's shape: paused a while
			for _, q := range runs.qs {
				if err := q.Resume(ctx); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	runs.each(t, ids)
	if keyed {
		runs.mu.Lock()
		for k, ns := range runs.byKey {
			if !slices.IsSorted(ns) {
				t.Errorf("key %s: tasks ran out of order: %v", k, ns)
			}
		}
		runs.mu.Unlock()
	}
	lmu.Lock()
	defer lmu.Unlock()
	t.Logf("replies lost: %d; by kind: %v of %v", lose.Lost(), armed, seen)
	for _, k := range [][]byte{lose.Match, lose.Also[0], lose.Also[2], lose.Also[3]} {
		if armed[kind(k)] < 2 {
			t.Errorf("%d replies of %s lost, want at least 2", armed[kind(k)], kind(k))
		}
	}
}

// kind names what a command matched, for the log.
func kind(m []byte) string { return strings.Join(strings.Fields(string(m)), " ") }

// runLossy runs queue jobs (concurrency c, a visibility timeout of five
// minutes, and opts) on worker w1 of an App whose client loses replies as
// lose says, beside queue more, of the same settings, which shares the
// App's blocking read when both are idle. The handler counts each task's
// runs and sleeps as long as sleep says.
func runLossy(t *testing.T, e *env, lose *redistest.ReplyLoser, c int, sleep func(job) time.Duration, opts ...task.Option) (*task.Queue[job, out], *taskRuns) {
	t.Helper()
	a, err := app.New(app.Config{Name: "shop", Client: lose.Client(t, e.client), KeyPrefix: e.prefix, WorkerID: "w1", Logger: testLogger()})
	if err != nil {
		t.Fatal(err)
	}
	runs := &taskRuns{n: map[string]int{}, byKey: map[string][]int{}}
	handler := func(queue string) func(context.Context, *task.Task[job]) (out, error) {
		return func(ctx context.Context, tk *task.Task[job]) (out, error) {
			runs.mu.Lock()
			runs.n[tk.ID]++
			if tk.Key != "" {
				k := queue + "/" + tk.Key
				runs.byKey[k] = append(runs.byKey[k], tk.Payload.N)
			}
			runs.mu.Unlock()
			time.Sleep(sleep(tk.Payload)) // the task's work
			return out{Double: 2 * tk.Payload.N}, nil
		}
	}
	opts = append([]task.Option{task.Concurrency(c), task.Visibility(5 * time.Minute)}, opts...)
	for _, name := range []string{"jobs", "more"} {
		q, err := task.Handle(a, name, handler(name), opts...)
		if err != nil {
			t.Fatal(err)
		}
		runs.qs = append(runs.qs, q)
	}
	e.run(a)
	return runs.qs[0], runs
}

// taskRuns counts the runs of each task of a queue.
type taskRuns struct {
	qs    []*task.Queue[job, out] // jobs, more
	mu    sync.Mutex
	n     map[string]int
	byKey map[string][]int // payloads' N in the order their runs began, per queue/key
}

// each waits until every task of ids succeeded (within 30s, far below the
// visibility timeout), then checks that each ran once.
func (r *taskRuns) each(t *testing.T, ids []string) {
	t.Helper()
	redistest.Eventually(t, 30*time.Second, "every task succeeded", func() bool {
		var done int64
		for _, q := range r.qs {
			c, err := q.Counts(context.Background())
			if err != nil {
				return false
			}
			done += c[task.Succeeded]
		}
		return done == int64(len(ids))
	})
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, id := range ids {
		if r.n[id] != 1 {
			t.Errorf("task %s ran %d times, want 1", id, r.n[id])
		}
	}
}

// A given call whose reply was lost is sent again, and under a rate limit
// that run too may start fewer of its entries than it was given: the rest
// stay pending with the worker, and are taken when the next window opens,
// as after a first run that started fewer. (The call sent again returned
// its tasks without a word about the rest, which were left pending with
// nobody to take them before the visibility timeout.)
func TestLostGivenReplyUnderRate(t *testing.T) {
	e := newEnv(t)
	ctx := ctxT(t)
	a, lose, arm, name := givenLoser(t, e)
	var ran atomic.Int32
	q, err := task.Handle(a, "rated", func(ctx context.Context, tk *task.Task[job]) (out, error) {
		ran.Add(1)
		return out{}, nil
	}, task.Concurrency(4), task.Rate(1, 2*time.Second), task.Visibility(5*time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	e.run(a)
	waitBlocked(t, e.client, name)
	arm.Store(true)
	if _, err := q.EnqueueMany(ctx, []job{{N: 1}, {N: 2}, {N: 3}}); err != nil {
		t.Fatal(err)
	}
	redistest.Eventually(t, 10*time.Second, "the given call's reply lost, and a task run", func() bool {
		return lose.Lost() == 1 && ran.Load() >= 1
	})
	redistest.Eventually(t, 15*time.Second, "the other two run in the next windows", func() bool {
		n, err := q.Counts(ctx)
		return err == nil && n[task.Succeeded] == 3
	})
	if n := ran.Load(); n != 3 {
		t.Fatalf("%d runs, want 3", n)
	}
}

// givenLoser returns an App (worker w1) whose client, named name, loses the
// reply of one given-mode fetch call ("given" is its fourth argument) once
// arm is set.
func givenLoser(t *testing.T, e *env) (a *app.App, lose *redistest.ReplyLoser, arm *atomic.Bool, name string) {
	t.Helper()
	lose = &redistest.ReplyLoser{Match: []byte("$5\r\ngiven\r\n")}
	arm = new(atomic.Bool)
	lose.Armed = func() bool { return arm.Load() && lose.Lost() < 1 }
	opt := *e.client.Options()
	opt.Dialer, opt.ClientName = lose.Dial, "lost-"+e.prefix
	c := redis.NewClient(&opt)
	t.Cleanup(func() { _ = c.Close() })
	a, err := app.New(app.Config{Name: "shop", Client: c, KeyPrefix: e.prefix, WorkerID: "w1", Logger: testLogger()})
	if err != nil {
		t.Fatal(err)
	}
	return a, lose, arm, opt.ClientName
}
