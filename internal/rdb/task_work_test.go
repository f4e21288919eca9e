package rdb_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/leatdev/leat/internal/rdb"
	"github.com/leatdev/leat/internal/tools/redistest"
	"github.com/redis/go-redis/v9"
)

// privateQueue is a queue on a redis-server of its own, whose command
// statistics count only the queue's work.
type privateQueue struct {
	c    *redis.Client
	keys []string
	enq  rdb.Target
	ctx  context.Context
	next int
}

func newPrivateQueue(tb testing.TB) *privateQueue {
	tb.Helper()
	s := redistest.Start(tb)
	opt, err := redis.ParseURL(s.URL)
	if err != nil {
		tb.Fatal(err)
	}
	c := redis.NewClient(opt)
	tb.Cleanup(func() { c.Close() })
	ks := rdb.NewKeySpace("w", "app")
	p := &privateQueue{c: c, keys: rdb.Keys(ks, "q"), enq: rdb.EnqueueTarget(ks, "q"), ctx: context.Background()}
	if err := c.XGroupCreateMkStream(p.ctx, ks.TaskStream("q", 0), rdb.TaskGroup, "0").Err(); err != nil {
		tb.Fatal(err)
	}
	if err := rdb.LoadTaskScripts(p.ctx, c); err != nil {
		tb.Fatal(err)
	}
	return p
}

// enqueue adds n tasks with a retention, 1,000 per script call.
func (p *privateQueue) enqueue(tb testing.TB, n int) {
	tb.Helper()
	for n > 0 {
		batch := make([]rdb.NewTask, 0, min(n, 1000))
		for range cap(batch) {
			p.next++
			batch = append(batch, rdb.NewTask{ID: "t" + strconv.Itoa(p.next), Payload: []byte(`{"n":1}`), Retention: time.Hour})
		}
		if _, _, err := rdb.Enqueue(p.ctx, p.c, p.enq, batch); err != nil {
			tb.Fatal(err)
		}
		n -= len(batch)
	}
}

// run fetches up to n tasks in one call and records their successes in
// one call, and returns how many it ran.
func (p *privateQueue) run(tb testing.TB, n int) int {
	tb.Helper()
	got, err := rdb.FetchTasks(p.ctx, p.c, p.keys, "w1", rdb.Limits{}, rdb.NewCall(), []int{n}, n)
	if err != nil {
		tb.Fatal(err)
	}
	outs := make([]rdb.Outcome, len(got))
	for i, f := range got {
		outs[i] = rdb.Outcome{ID: f.ID, Entry: f.Entry, Level: f.Level, Kind: rdb.OK, Data: []byte(`1`)}
	}
	states, err := rdb.FinishCmd(p.ctx, p.c, p.keys, "w1", 100, time.Hour, outs).StringSlice()
	if err != nil {
		tb.Fatal(err)
	}
	for i, st := range states {
		if st != "succeeded" {
			tb.Fatalf("task %s left %q, want succeeded", got[i].ID, st)
		}
	}
	return len(got)
}

// stats returns the server's command statistics: calls per command (the
// commands scripts run included) and the microseconds spent in scripts.
func (p *privateQueue) stats(tb testing.TB) (calls map[string]int64, scriptUsec int64) {
	tb.Helper()
	info, err := p.c.Info(p.ctx, "commandstats").Result()
	if err != nil {
		tb.Fatal(err)
	}
	calls = map[string]int64{}
	for _, line := range strings.Split(info, "\n") {
		name, rest, ok := strings.Cut(strings.TrimSpace(line), ":")
		if !ok || !strings.HasPrefix(name, "cmdstat_") {
			continue
		}
		name = strings.TrimPrefix(name, "cmdstat_")
		for _, f := range strings.Split(rest, ",") {
			k, v, _ := strings.Cut(f, "=")
			n, _ := strconv.ParseInt(v, 10, 64)
			switch {
			case k == "calls":
				calls[name] = n
			case k == "usec" && (name == "evalsha" || name == "eval"):
				scriptUsec += n
			}
		}
	}
	return calls, scriptUsec
}

func (p *privateQueue) resetStats(tb testing.TB) {
	tb.Helper()
	if err := p.c.ConfigResetStat(p.ctx).Err(); err != nil {
		tb.Fatal(err)
	}
}

// The Redis work of running a task does not grow with the number of tasks
// queued behind it, nor with the finished tasks retained: fetching and
// finishing 200 tasks runs the same commands, as many times each, whether
// 200 or 20,200 tasks are queued and 0 or 20,000 are retained, and none of
// them reads a range (XPENDING asks for the oldest pending entry alone).
func TestTaskWorkIndependentOfBacklog(t *testing.T) {
	p := newPrivateQueue(t)
	measure := func() map[string]int64 {
		p.resetStats(t)
		ran := 0
		for ran < 200 {
			ran += p.run(t, 50)
		}
		calls, _ := p.stats(t)
		delete(calls, "config|resetstat")
		return calls
	}
	p.enqueue(t, 201)
	p.run(t, 1) // scripts cached
	small := measure()
	p.enqueue(t, 40_000)
	for ran := 0; ran < 20_000; {
		ran += p.run(t, 100) // retained: 20,000 finished tasks
	}
	large := measure()
	if fmt.Sprint(small) != fmt.Sprint(large) {
		t.Fatalf("commands for 200 tasks: %v with a short queue, %v with 20,200 queued and 20,000 retained", small, large)
	}
	for cmd := range large {
		switch cmd {
		case "zrange", "zrangebyscore", "zcard", "xrange", "lrange", "scan":
			t.Errorf("running tasks called %s: %v", cmd, large)
		}
	}
	t.Logf("commands for 200 tasks: %v", large)
}

// BenchmarkFetchFinish fetches b.N tasks, 100 per script call, then records
// their successes, 100 per call, and reports the server's script time per
// task for each step and both (less sensitive to a loaded machine than
// tasks/s) and the commands the scripts ran per task. Enqueueing is not
// timed.
//
//	go test -run '^$' -bench FetchFinish -benchtime 50000x ./internal/rdb
func BenchmarkFetchFinish(b *testing.B) {
	p := newPrivateQueue(b)
	p.enqueue(b, b.N)
	p.resetStats(b)
	b.ResetTimer()
	var fetched [][]rdb.Fetched
	for ran := 0; ran < b.N; {
		got, err := rdb.FetchTasks(p.ctx, p.c, p.keys, "w1", rdb.Limits{}, rdb.NewCall(), []int{100}, 100)
		if err != nil {
			b.Fatal(err)
		}
		fetched = append(fetched, got)
		ran += len(got)
	}
	b.StopTimer()
	fetchCalls, fetchUsec := p.stats(b)
	p.resetStats(b)
	b.StartTimer()
	for _, got := range fetched {
		outs := make([]rdb.Outcome, len(got))
		for i, f := range got {
			outs[i] = rdb.Outcome{ID: f.ID, Entry: f.Entry, Level: f.Level, Kind: rdb.OK, Data: []byte(`1`)}
		}
		if err := rdb.FinishCmd(p.ctx, p.c, p.keys, "w1", 100, time.Hour, outs).Err(); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	finishCalls, finishUsec := p.stats(b)
	perTask := func(n int64) float64 { return float64(n) / float64(b.N) }
	b.ReportMetric(perTask(fetchUsec), "fetch-usec/task")
	b.ReportMetric(perTask(finishUsec), "finish-usec/task")
	b.ReportMetric(perTask(fetchUsec+finishUsec), "script-usec/task")
	var inner int64
	for _, calls := range []map[string]int64{fetchCalls, finishCalls} {
		for cmd, n := range calls {
			if cmd != "evalsha" && cmd != "eval" && cmd != "config|resetstat" && cmd != "info" {
				inner += n
			}
		}
	}
	b.ReportMetric(perTask(inner), "commands/task")
}
