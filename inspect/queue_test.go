package inspect_test

import (
	"context"
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/leatdev/leat/inspect"
	"github.com/leatdev/leat/internal/rdb"
	"github.com/leatdev/leat/internal/tools/redistest"
	"github.com/redis/go-redis/v9"
)

// mailQueue registers the task queue "mail" of app "shop" (two strict
// priority levels, high and low) with its ready streams, and returns the
// app's key space and the queue's script keys.
func mailQueue(t *testing.T, c *redis.Client, prefix string) (rdb.KeySpace, []string) {
	t.Helper()
	ctx := context.Background()
	k := rdb.NewKeySpace(prefix, "shop")
	c.HSet(ctx, k.TaskQueues(), "mail", `{"name":"mail","levels":[{"Name":"high","Weight":1},{"Name":"low","Weight":1}],"strict":true,"concurrency":4,"rate":5,"rate_window":400000000}`)
	for l := range 2 {
		if err := c.XGroupCreateMkStream(ctx, k.TaskStream("mail", l), rdb.TaskGroup, "0").Err(); err != nil {
			t.Fatal(err)
		}
	}
	return k, rdb.Keys(k, "mail")
}

// A task queue run through its scripts: the report's counts, ages and
// throughput are what Redis holds.
func TestQueueFigures(t *testing.T) {
	t.Parallel()
	c, prefix := redistest.Client(t)
	ctx := context.Background()
	k, ks := mailQueue(t, c, prefix)
	in := inspect.New(c, prefix, "shop")
	r, err := in.Queue(ctx, "mail")
	if err != nil {
		t.Fatal(err)
	}
	if r.OldestReadyAgeMS != nil || r.Delivered != 0 || r.Throughput.LastMinute.Finished != 0 || len(r.Levels) != 2 || r.Counts["pending"] != 0 {
		t.Fatalf("empty queue: %+v", r)
	}
	if r.Rate == nil || *r.Rate != (inspect.RateLimit{Tasks: 5, WindowMS: 400}) || r.KeyRate != nil || r.PausedAt != nil {
		t.Fatalf("rate limits and pause: %+v %+v %v", r.Rate, r.KeyRate, r.PausedAt)
	}
	if err := c.HSet(ctx, k.TaskConfig("mail"), "paused", 1700000000000).Err(); err != nil {
		t.Fatal(err)
	}
	if r, _ := in.Queue(ctx, "mail"); r.PausedAt == nil || !r.PausedAt.Equal(time.UnixMilli(1700000000000)) {
		t.Fatalf("paused at %v", r.PausedAt)
	}
	c.HDel(ctx, k.TaskConfig("mail"), "paused")
	// A rate set live replaces the workers' in the report; lifted live, none.
	c.HSet(ctx, k.TaskConfig("mail"), rdb.RateField, rdb.LiveRate(rdb.Rate{N: 7, Window: time.Second}))
	if r, _ := in.Queue(ctx, "mail"); r.Rate == nil || *r.Rate != (inspect.RateLimit{Tasks: 7, WindowMS: 1000}) || !r.RateLive {
		t.Fatalf("live rate: %+v, live %v", r.Rate, r.RateLive)
	}
	c.HSet(ctx, k.TaskConfig("mail"), rdb.RateField, rdb.LiveRate(rdb.Rate{}))
	if r, _ := in.Queue(ctx, "mail"); r.Rate != nil || !r.RateLive {
		t.Fatalf("rate lifted live: %+v, live %v", r.Rate, r.RateLive)
	}
	c.HDel(ctx, k.TaskConfig("mail"), rdb.RateField)
	if r, _ := in.Queue(ctx, "mail"); r.Rate == nil || r.Rate.Tasks != 5 || r.RateLive {
		t.Fatalf("live rate cleared: %+v, live %v", r.Rate, r.RateLive)
	}
	// A concurrency set live replaces the declared 4.
	c.HSet(ctx, k.TaskConfig("mail"), "concurrency", 9)
	if r, _ := in.Queue(ctx, "mail"); r.Concurrency != 9 || !r.ConcurrencyLive {
		t.Fatalf("live concurrency: %d, live %v", r.Concurrency, r.ConcurrencyLive)
	}
	c.HDel(ctx, k.TaskConfig("mail"), "concurrency")
	if r, _ := in.Queue(ctx, "mail"); r.Concurrency != 4 || r.ConcurrencyLive {
		t.Fatalf("live concurrency cleared: %d, live %v", r.Concurrency, r.ConcurrencyLive)
	}

	// Five tasks enqueued between before and after; three taken, of which
	// one succeeds and one dies.
	before := c.Time(ctx).Val()
	var tasks []rdb.NewTask
	for i := range 5 {
		tasks = append(tasks, rdb.NewTask{ID: "t" + strconv.Itoa(i), Payload: []byte(`1`), Retention: time.Hour})
	}
	if _, _, err := rdb.Enqueue(ctx, c, rdb.EnqueueTarget(k, "mail"), tasks); err != nil {
		t.Fatal(err)
	}
	after := c.Time(ctx).Val()
	got, err := rdb.FetchTasks(ctx, c, ks, "A", rdb.Limits{}, rdb.NewCall(), []int{3, 0}, 3)
	if err != nil || len(got) != 3 {
		t.Fatal(got, err)
	}
	for i, kind := range []string{rdb.OK, rdb.Dead} {
		if err := rdb.FinishCmd(ctx, c, ks, "A", 100, time.Hour, []rdb.Outcome{{ID: got[i].ID, Entry: got[i].Entry, Kind: kind, Data: []byte(`1`)}}).Err(); err != nil {
			t.Fatal(err)
		}
	}
	// A task of the low level ready for 90 seconds, as enqueue.lua leaves
	// it but for the time in its entry ID.
	oldMS := before.UnixMilli() - 90_000
	oldEntry := strconv.FormatInt(oldMS, 10) + "-0"
	c.XAdd(ctx, &redis.XAddArgs{Stream: k.TaskStream("mail", 1), ID: oldEntry, Values: []any{"t", "old"}})
	c.HSet(ctx, k.TaskPrefix("mail")+"old", "s", "pending", "p", "1", "l", 1, "a", 0, "r", 0, "to", 1000, "ret", 3600000, "e", oldMS, "d", oldMS, "x", oldEntry)
	c.HIncrBy(ctx, k.TaskCounts("mail"), "pending", 1)

	r, err = in.Queue(ctx, "mail")
	if err != nil {
		t.Fatal(err)
	}
	counts := c.HGetAll(ctx, k.TaskCounts("mail")).Val()
	for st, n := range map[string]int64{"pending": 3, "active": 1, "succeeded": 1, "dead": 1, "failed": 0} {
		if r.Counts[st] != n || strconv.FormatInt(n, 10) != counts[st] && n != 0 {
			t.Errorf("count of %s: report %d, Redis %q, want %d", st, r.Counts[st], counts[st], n)
		}
	}
	now := r.Time.UnixMilli()
	high, low := r.Levels[0], r.Levels[1]
	// The oldest ready entry of the high level is the fourth task's, enqueued
	// between before and after.
	if want := c.HGet(ctx, k.TaskPrefix("mail")+"t3", "x").Val(); high.OldestReadyID != want || high.OldestReadyAgeMS == nil ||
		*high.OldestReadyAgeMS < now-after.UnixMilli() || *high.OldestReadyAgeMS > now-before.UnixMilli() {
		t.Errorf("high level %+v: want oldest ready %s, aged %d..%d ms", high, want, now-after.UnixMilli(), now-before.UnixMilli())
	}
	// The third task runs: its entry is the one delivered and not acknowledged.
	if high.Delivered != 1 || high.OldestDeliveredID != got[2].Entry || high.OldestDeliveredAgeMS == nil || r.Delivered != 1 {
		t.Errorf("high level %+v: want 1 delivered, %s", high, got[2].Entry)
	}
	if low.OldestReadyID != oldEntry || low.OldestReadyAgeMS == nil || *low.OldestReadyAgeMS != now-oldMS || low.Delivered != 0 || low.Name != "low" {
		t.Errorf("low level %+v: want %s aged %d ms", low, oldEntry, now-oldMS)
	}
	if r.OldestReadyAgeMS == nil || *r.OldestReadyAgeMS != now-oldMS {
		t.Errorf("oldest ready of the queue: %v, want %d", r.OldestReadyAgeMS, now-oldMS)
	}

	// Every task ends: 6 finished (the old one included).
	for {
		got, err := rdb.FetchTasks(ctx, c, ks, "B", rdb.Limits{}, rdb.NewCall(), []int{10, 10}, 10)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) == 0 {
			break
		}
		for _, g := range got {
			rdb.FinishCmd(ctx, c, ks, "B", 100, time.Hour, []rdb.Outcome{{ID: g.ID, Level: g.Level, Entry: g.Entry, Kind: rdb.OK}})
		}
	}
	// The task A still runs fails its last attempt: dead.
	rdb.FinishCmd(ctx, c, ks, "A", 100, time.Hour, []rdb.Outcome{{ID: got[2].ID, Entry: got[2].Entry, Kind: rdb.Dead}})
	r, err = in.Queue(ctx, "mail")
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []struct {
		name       string
		rate       inspect.Rate
		minS, maxS float64
	}{{"last minute", r.Throughput.LastMinute, 50, 60}, {"last 5 minutes", r.Throughput.LastFiveMinute, 290, 300}} {
		if w.rate.Finished != 6 || w.rate.Seconds < w.minS || w.rate.Seconds > w.maxS || w.rate.PerSecond != 6/w.rate.Seconds {
			t.Errorf("%s: %+v, want 6 finished over %v..%v s", w.name, w.rate, w.minS, w.maxS)
		}
	}
	if r.Counts["succeeded"] != 4 || r.Counts["dead"] != 2 || r.Counts["pending"] != 0 || r.Counts["active"] != 0 ||
		r.OldestReadyAgeMS != nil || r.Delivered != 0 || r.OldestDeliveredAgeMS != nil {
		t.Errorf("after every task ended: %+v", r)
	}

	o, err := in.Overview(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(o.Queues) != 1 || o.Queues[0].Name != "mail" || o.Queues[0].Concurrency != 4 || o.Queues[0].Counts["succeeded"] != 4 ||
		o.Queues[0].Throughput.LastMinute.Finished != 6 {
		t.Errorf("overview queues %+v", o.Queues)
	}
	if _, err := in.Queue(ctx, "nope"); !errors.Is(err, inspect.ErrUnknownQueue) {
		t.Errorf("unknown queue: %v", err)
	}
}

// The workers of a task queue are the consumers of its ready streams: each
// with the tasks delivered to it, alive while Redis saw a read give it
// entries or a claim within TaskWorkerAlive; one that stopped is listed while it has tasks
// delivered (to be reclaimed), then no more. The overview lists them with
// their worker, merged with its executors, the leader marked; a queue's
// report names its own leader.
func TestQueueWorkers(t *testing.T) {
	t.Parallel()
	c, prefix := redistest.Client(t)
	ctx := context.Background()
	k, ks := mailQueue(t, c, prefix)
	c.Set(ctx, k.Leader(), "7 B", 0)
	c.Set(ctx, k.LeaderOf(rdb.TaskLease("mail")), "8 A", 0) // the queue's leader is A
	var tasks []rdb.NewTask
	for i := range 4 {
		tasks = append(tasks, rdb.NewTask{ID: "t" + strconv.Itoa(i), Payload: []byte(`1`), Level: i % 2, Retention: time.Hour})
	}
	if _, _, err := rdb.Enqueue(ctx, c, rdb.EnqueueTarget(k, "mail"), tasks); err != nil {
		t.Fatal(err)
	}
	// A runs two tasks, one per level; B ran one and is idle.
	a, err := rdb.FetchTasks(ctx, c, ks, "A", rdb.Limits{}, rdb.NewCall(), []int{1, 1}, 2)
	if err != nil || len(a) != 2 {
		t.Fatal(a, err)
	}
	b, err := rdb.FetchTasks(ctx, c, ks, "B", rdb.Limits{}, rdb.NewCall(), []int{1, 0}, 1)
	if err != nil || len(b) != 1 {
		t.Fatal(b, err)
	}
	if err := rdb.FinishCmd(ctx, c, ks, "B", 100, time.Hour, []rdb.Outcome{{ID: b[0].ID, Entry: b[0].Entry, Kind: rdb.OK}}).Err(); err != nil {
		t.Fatal(err)
	}

	in := inspect.New(c, prefix, "shop")
	const alive = time.Second
	inspect.SetTaskWorkerAlive(in, alive)
	r, err := in.Queue(ctx, "mail")
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Workers) != 2 {
		t.Fatalf("workers %+v, want A and B", r.Workers)
	}
	wa, wb := r.Workers[0], r.Workers[1]
	if wa.Worker != "A" || wa.Queue != "mail" || wa.Running != 2 || !wa.Alive || wa.IdleMS >= alive.Milliseconds() ||
		wb.Worker != "B" || wb.Running != 0 || !wb.Alive {
		t.Fatalf("workers %+v: want A running 2 and B none, both alive", r.Workers)
	}
	if r.Leader != "A" {
		t.Fatalf("queue leader %q, want A", r.Leader)
	}
	o, err := in.Overview(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(o.Workers) != 2 || o.Workers[0].ID != "A" || o.Workers[0].Leader || len(o.Workers[0].Queues) != 1 || o.Workers[0].Queues[0].Running != 2 ||
		o.Workers[1].ID != "B" || !o.Workers[1].Leader || len(o.Workers[1].Queues) != 1 || o.Workers[0].Executors == nil {
		t.Fatalf("overview workers %+v: want A (2 running) and B (the leader)", o.Workers)
	}

	// Both stop: A with its tasks still delivered (a crash), B with none.
	redistest.Eventually(t, 10*time.Second, "A no longer alive, B gone", func() bool {
		r, err = in.Queue(ctx, "mail")
		if err != nil {
			t.Fatal(err)
		}
		for _, w := range r.Workers {
			if w.Alive {
				return false
			}
		}
		return true
	})
	if len(r.Workers) != 1 || r.Workers[0].Worker != "A" || r.Workers[0].Running != 2 || r.Workers[0].IdleMS < alive.Milliseconds() {
		t.Fatalf("workers %+v: want A alone, not alive, with its 2 tasks", r.Workers)
	}
	// The leader is listed all the same, with no queue.
	if o, err = in.Overview(ctx); err != nil {
		t.Fatal(err)
	}
	if len(o.Workers) != 2 || o.Workers[1].ID != "B" || !o.Workers[1].Leader || o.Workers[1].Queues == nil || len(o.Workers[1].Queues) != 0 {
		t.Fatalf("overview workers %+v: want A, then the leader B with no queue", o.Workers)
	}
}

// The report gives a keyed queue's key concurrency (1 when its definition
// names none) and backlog bound as the registry records them; an unkeyed
// queue has neither.
func TestQueueKeySettings(t *testing.T) {
	t.Parallel()
	c, prefix := redistest.Client(t)
	ctx := context.Background()
	k := rdb.NewKeySpace(prefix, "shop")
	c.HSet(ctx, k.TaskQueues(), "jobs", `{"name":"jobs","keyed":true,"levels":[{"Name":"default","Weight":1}],"strict":true,"concurrency":4,"key_concurrency":3,"max_key_backlog":50}`,
		"plain", `{"name":"plain","keyed":true,"levels":[{"Name":"default","Weight":1}],"strict":true,"concurrency":4}`)
	in := inspect.New(c, prefix, "shop")
	for _, want := range []struct {
		name        string
		conc, bound int
	}{{"jobs", 3, 50}, {"plain", 1, 0}} {
		r, err := in.Queue(ctx, want.name)
		if err != nil {
			t.Fatal(err)
		}
		if r.KeyConcurrency != want.conc || r.MaxKeyBacklog != want.bound {
			t.Errorf("queue %s: key concurrency %d, max key backlog %d; want %d, %d", want.name, r.KeyConcurrency, r.MaxKeyBacklog, want.conc, want.bound)
		}
	}
	_, _ = mailQueue(t, c, prefix)
	if r, err := in.Queue(ctx, "mail"); err != nil || r.KeyConcurrency != 0 || r.MaxKeyBacklog != 0 {
		t.Fatalf("unkeyed queue: %+v, %v", r, err)
	}
}
