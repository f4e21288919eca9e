//go:build linux

package chaos_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/leatdev/leat/app"
	"github.com/leatdev/leat/internal/rdb"
	"github.com/leatdev/leat/internal/tools/chaos"
	"github.com/leatdev/leat/internal/tools/redistest"
	"github.com/leatdev/leat/stream"
	"github.com/leatdev/leat/task"
	"github.com/redis/go-redis/v9"
)

const (
	drainTimeout = 3 * time.Minute
	stopTimeout  = 30 * time.Second
)

// TestChaos runs worker processes under faults for LEAT_CHAOS_DURATION
// (skipped when unset), with the seed LEAT_CHAOS_SEED (random when
// unset; printed), then drains and checks the workers' records: see
// docs/chaos.md.
func TestChaos(t *testing.T) {
	env := os.Getenv("LEAT_CHAOS_DURATION")
	if env == "" {
		t.Skip("set LEAT_CHAOS_DURATION (for example 2m) to run the chaos runner")
	}
	d, err := time.ParseDuration(env)
	if err != nil || d <= 0 {
		t.Fatalf("LEAT_CHAOS_DURATION=%q: want a positive duration such as 2m or 30m", env)
	}
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("LEAT_CHAOS_SEED"); s != "" {
		if seed, err = strconv.ParseUint(s, 10, 64); err != nil {
			t.Fatalf("LEAT_CHAOS_SEED=%q: want an unsigned integer", s)
		}
	}
	t.Logf("chaos: seed %d (replay the faults with LEAT_CHAOS_SEED=%d), duration %s, %d CPUs, load average %s",
		seed, seed, d, runtime.NumCPU(), loadavg())

	// The records, the workers' logs and the worker program stay for
	// inspection when the run fails.
	dir, err := os.MkdirTemp("", "leat-chaos-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("records and worker logs kept in %s", dir)
			return
		}
		os.RemoveAll(dir)
	})
	srv := redistest.StartPersistent(t)
	const prefix = "chaos"
	f := &fleet{t: t, bin: buildWorker(t, dir), dir: dir, url: srv.URL, prefix: prefix}
	t.Cleanup(func() {
		for _, p := range f.alive() {
			p.kill()
		}
	})

	// The producer's app, connected to the server directly.
	cfg := chaos.Config(srv.URL, prefix, "producer")
	a, err := app.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	events, err := chaos.DeclareStream(a)
	if err != nil {
		t.Fatal(err)
	}
	queue, err := task.Declare[chaos.Chore, chaos.Done](a, chaos.QueueName, chaos.QueueOptions()...)
	if err != nil {
		t.Fatal(err)
	}
	steps := map[string]*task.Queue[chaos.Step, chaos.Made]{}
	for _, name := range chaos.FlowQueues {
		if steps[name], err = task.Declare[chaos.Step, chaos.Made](a, name, chaos.FlowQueueOptions()...); err != nil {
			t.Fatal(err)
		}
	}

	for range initialWorkers {
		f.start()
	}
	begin := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	prod := newProducer(seed, events, queue)
	produced := make(chan struct{})
	go func() {
		defer close(produced)
		prod.run(ctx)
	}()
	watch := newFlowWatch(srv.Client(t), prefix)
	flows := &flowProducer{a: a, rng: rand.New(rand.NewPCG(seed, 3)), queues: steps, watch: watch}
	flowsSubmitted := make(chan struct{})
	go func() {
		defer close(flowsSubmitted)
		flows.run(ctx)
	}()
	watchCtx, stopWatch := context.WithCancel(context.Background())
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		watch.run(watchCtx)
	}()
	defer func() { cancel(); <-produced; <-flowsSubmitted; stopWatch(); <-watched }() // also when a fault fails the test
	in := &injector{t: t, rng: rand.New(rand.NewPCG(seed, 2)), fleet: f, srv: srv, queue: queue, begin: begin}
	in.run(ctx, d)
	<-produced
	<-flowsSubmitted
	in.logf("faults over; draining")

	// Drain: every acknowledged send committed, every task run and its
	// outcome recorded (a worker killed after a run and before its record
	// leaves the task active until the leader reclaims it, Visibility later,
	// and it runs again).
	log := chaos.NewLog()
	offsets := map[int]int64{}
	committed := map[string]map[int64]bool{}
	seen := 0
	var want int64
	for _, n := range prod.sends.Acked {
		want += n
	}
	var got int64
	tc := srv.Client(t)
	drainStart := time.Now()
	var flowsEnded time.Duration // into the drain, when every flow was seen ended
	drained := func() bool {
		// every flow seen ended (timed on its own: the flows' leader repairs
		// a flow a lost reply left behind only once it is idle 30 seconds)
		if watch.round(context.Background()) > 0 {
			return false
		}
		if flowsEnded == 0 {
			flowsEnded = time.Since(drainStart)
		}
		for _, p := range f.all() {
			if err := tailRecords(log, p, offsets); err != nil {
				t.Fatal(err)
			}
		}
		for _, c := range log.Commits[seen:] {
			if c.Seq <= prod.sends.Acked[c.Key] {
				if committed[c.Key] == nil {
					committed[c.Key] = map[int64]bool{}
				}
				if !committed[c.Key][c.Seq] {
					committed[c.Key][c.Seq] = true
					got++
				}
			}
		}
		seen = len(log.Commits)
		if got < want {
			return false
		}
		for _, id := range prod.tasks {
			if log.Tasks[id] == 0 {
				return false
			}
		}
		n, err := queue.Counts(context.Background())
		if err != nil {
			return false // the server is back by now; ask again
		}
		if n[task.Pending]+n[task.Active]+n[task.Retrying]+n[task.Scheduled] > 0 {
			return false
		}
		// no node task left to run
		for _, q := range steps {
			n, err := q.Counts(context.Background())
			if err != nil || n[task.Pending]+n[task.Active]+n[task.Retrying]+n[task.Scheduled] > 0 {
				return false
			}
		}
		tallies, err := readTallies(tc, prefix)
		if err != nil {
			return false
		}
		for key, acked := range prod.sends.Acked {
			if tallies[key].Last < acked {
				return false
			}
		}
		return true
	}
	deadline := drainStart.Add(drainTimeout)
	report := drainStart.Add(30 * time.Second)
	for !drained() {
		if time.Now().After(deadline) {
			n, err := queue.Counts(context.Background())
			t.Errorf("not drained after %s: %d of %d acknowledged sends committed; tasks per state %v (%v); %d flows not ended",
				drainTimeout, got, want, n, err, watch.round(context.Background()))
			diagnose(t, srv, prefix, f)
			break
		}
		if time.Now().After(report) {
			in.logf("draining: %d of %d acknowledged sends committed, %d flows not seen ended", got, want, watch.round(context.Background()))
			report = report.Add(30 * time.Second)
		}
		time.Sleep(200 * time.Millisecond)
	}
	drainTime := time.Since(drainStart)
	in.logf("drained in %s; stopping the workers", drainTime.Round(time.Millisecond))

	// Stop the workers; any exit the runner did not cause is a failure.
	for _, p := range f.alive() {
		if !p.stop(stopTimeout) {
			t.Errorf("worker %s did not stop cleanly within %s (%v):\n%s", p.id, stopTimeout, p.err, p.tail(20))
		}
	}
	for _, p := range f.all() {
		if !p.expected.Load() {
			t.Errorf("worker %s exited on its own (%v):\n%s", p.id, p.err, p.tail(20))
		}
		if err := tailRecords(log, p, offsets); err != nil {
			t.Fatal(err)
		}
	}

	rd := readRedis(t, srv, prefix, queue, prod.tasks)
	res := chaos.Check(prod.sends, prod.tasks, log, rd)
	stopWatch()
	<-watched
	fres := chaos.CheckFlows(flows.plans, log, readFlows(t, tc, prefix, steps, flows.plans, watch))
	summary := fmt.Sprintf("chaos: seed=%d duration=%s workers=%d events=%d processed=%d duplicates=%d commits=%d refused=%d abandoned=%d "+
		"tasks=%d task-runs=%d task-duplicates=%d kills=%d stalls=%d (mid-event %d, mid-node %d) freezes=%d starts=%d pauses=%d throttles=%d cuts=%d redis-restarts=%d "+
		"send-retries=%d drain=%s flows-drain=%s resent=%d late-duplicates=%d stale-states=%d lost=%d order-violations=%d fencing-violations=%d tasks-lost=%d table-violations=%d",
		seed, d, len(f.all()), res.Events, res.Processed, res.Duplicates, res.Commits, res.Refused, res.Abandoned,
		res.Tasks, res.TaskRuns, res.TaskDuplicates, in.n.Kills, in.n.Stalls, in.n.MidEvent, in.n.MidNode, in.n.Freezes, in.n.Starts,
		in.n.Pauses, in.n.Throttles, in.n.Cuts, in.n.RedisRestarts, prod.sendFails, drainTime.Round(time.Millisecond), flowsEnded.Round(time.Millisecond),
		res.Resent, res.Late, res.State, res.Lost, res.Order, res.Fencing, res.TasksLost, res.Tables)
	summary += fmt.Sprintf(" flows=%d flow-nodes=%d added-children=%d failing-nodes=%d node-runs=%d node-duplicates=%d sink-runs=%d flow-submit-retries=%d "+
		"flows-lost=%d nodes-lost=%d early-starts=%d flow-double-ends=%d node-outcome-violations=%d",
		fres.Flows, fres.Nodes, fres.Added, fres.Failing, fres.NodeRuns, fres.NodeDuplicates, fres.SinkRuns, flows.fails,
		fres.FlowsLost, fres.NodesLost, fres.Early, fres.DoubleEnds, fres.Outcomes)
	t.Log(summary)
	t.Logf("load average at the end %s", loadavg())
	for _, n := range res.Notes {
		t.Log("note:", n)
	}
	for _, p := range res.Problems {
		t.Error(p)
	}
	for _, p := range fres.Problems {
		t.Error(p)
	}
	if !res.OK() || !fres.OK() {
		t.Errorf("chaos run failed; replay with LEAT_CHAOS_SEED=%d", seed)
	}
	if in.n.Kills == 0 || in.n.Stalls == 0 || in.n.Freezes == 0 || in.n.Starts == 0 || in.n.Pauses == 0 || in.n.Throttles == 0 || in.n.Cuts == 0 || in.n.RedisRestarts == 0 {
		t.Errorf("not every fault was injected (%+v): run longer", in.n)
	}
}

// tailRecords reads p's new records into log.
func tailRecords(log *chaos.Log, p *proc, offsets map[int]int64) error {
	fh, err := os.Open(p.out)
	if os.IsNotExist(err) {
		return nil // not written yet
	}
	if err != nil {
		return err
	}
	defer fh.Close()
	off, err := log.Tail(p.n, fh, offsets[p.n])
	offsets[p.n] = off
	return err
}

// readRedis reads the partitions' commit logs and state, and the states
// of the acknowledged tasks.
func readRedis(t *testing.T, srv *redistest.Server, prefix string, queue *task.Queue[chaos.Chore, chaos.Done], tasks []string) chaos.Redis {
	t.Helper()
	ctx := context.Background()
	c := srv.Client(t)
	ks := rdb.NewKeySpace(prefix, chaos.AppName)
	rd := chaos.Redis{CommitLogs: map[int][]int64{}, State: map[string]int64{}, TaskStates: map[string]string{}}
	for p := range chaos.Partitions {
		vals, err := c.LRange(ctx, ks.Local("chaos-commits", "events", p), 0, -1).Result()
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range vals {
			tok, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				t.Fatalf("partition %d: commit log entry %q", p, v)
			}
			rd.CommitLogs[p] = append(rd.CommitLogs[p], tok)
		}
		state, err := c.HGetAll(ctx, ks.Local("chaos-state", "events", p)).Result()
		if err != nil {
			t.Fatal(err)
		}
		for k, v := range state {
			seq, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				t.Fatalf("partition %d: state of %s: %q", p, k, v)
			}
			rd.State[k] = seq
		}
	}
	tallies, err := readTallies(c, prefix)
	if err != nil {
		t.Fatal(err)
	}
	rd.Tallies = tallies
	for _, id := range tasks {
		info, err := queue.Info(ctx, id)
		if err != nil {
			rd.TaskStates[id] = "error: " + err.Error()
			continue
		}
		rd.TaskStates[id] = string(info.State)
	}
	return rd
}

// readTallies reads the tally processor's table, every partition's hash.
func readTallies(c *redis.Client, prefix string) (map[string]chaos.Tally, error) {
	ks := rdb.NewKeySpace(prefix, chaos.AppName)
	out := map[string]chaos.Tally{}
	for p := range chaos.Partitions {
		vals, err := c.HGetAll(context.Background(), ks.Table("events", chaos.TallyProcessor, "tally", p)).Result()
		if err != nil {
			return nil, err
		}
		for k, v := range vals {
			var t chaos.Tally
			if err := stream.MsgPack.Unmarshal([]byte(v), &t); err != nil {
				return nil, fmt.Errorf("tally of %q: %w", k, err)
			}
			out[k] = t
		}
	}
	return out, nil
}

// diagnose logs the state of the partitions and the workers, for a run
// that did not drain.
func diagnose(t *testing.T, srv *redistest.Server, prefix string, f *fleet) {
	t.Helper()
	ctx := context.Background()
	c := srv.Client(t)
	ks := rdb.NewKeySpace(prefix, chaos.AppName)
	for p := range chaos.Partitions {
		groups, err := c.XInfoGroups(ctx, ks.Partition("events", p)).Result()
		owner, _ := c.Get(ctx, ks.Lock("events", "apply", p)).Result()
		t.Logf("partition %d: groups %+v (error %v), lock %q", p, groups, err, owner)
	}
	for _, p := range f.all() {
		t.Logf("worker %s (exited %v, %v):\n%s", p.id, p.exited(), p.err, p.tail(30))
	}
}

// loadavg returns the machine's load averages (1, 5, 15 minutes).
func loadavg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}
