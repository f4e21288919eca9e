package app_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/leatdev/leat/app"
	"github.com/leatdev/leat/executor"
	"github.com/leatdev/leat/internal/tools/redistest"
	"github.com/leatdev/leat/stream"
	"github.com/leatdev/leat/task"
	"github.com/redis/go-redis/v9"
)

// sentinelLoad is a producer per key sending steadily through a failover
// client and two workers processing the stream and running a task queue,
// on the master of a Sentinel setup.
type sentinelLoad struct {
	log    *failoverLog
	ran    sync.Map // task payloads run
	q      *task.Queue[int, int]
	w1, w2 *worker
	stop   func()        // stops the producers
	sender *redis.Client // the producer's client
}

func startSentinelLoad(t *testing.T, sn *redistest.Sentinel) *sentinelLoad {
	t.Helper()
	l := &sentinelLoad{log: &failoverLog{inSend: map[string]time.Time{}}}
	opts := executor.Options{LockExpiry: 4 * time.Second, ReadBlock: 200 * time.Millisecond, Grace: 2 * time.Second}
	newApp := func(worker string) (*app.App, *stream.Stream[event], *task.Queue[int, int]) {
		c := sn.Client(t)
		if l.sender == nil {
			l.sender = c
		}
		a, err := app.New(app.Config{Name: "shop", Client: c, WorkerID: worker, Logger: testLogger(),
			Processing: opts, LeaderLease: 2 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		s, err := stream.Declare[event](a, "events", stream.KeyField("key"), stream.Partitions(8))
		if err != nil {
			t.Fatal(err)
		}
		if err := app.Process(a, s, "p", l.log.processor(worker, "events")); err != nil {
			t.Fatal(err)
		}
		q, err := task.Handle(a, "jobs", func(ctx context.Context, tk *task.Task[int]) (int, error) {
			l.ran.Store(tk.Payload, true)
			return tk.Payload, nil
		}, task.Visibility(3*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		return a, s, q
	}
	_, s, q := newApp("producer") // sends and enqueues only; never runs
	l.q = q
	a1, _, _ := newApp("w1")
	a2, _, _ := newApp("w2")
	l.w1, l.w2 = startWorker(t, a1), startWorker(t, a2)

	ctx, stop := context.WithCancel(context.Background())
	var prod sync.WaitGroup
	l.stop = func() { stop(); prod.Wait() }
	t.Cleanup(l.stop)
	for i := range 8 {
		k := fmt.Sprintf("k%d", i)
		prod.Add(1)
		go func() {
			defer prod.Done()
			tick := time.NewTicker(5 * time.Millisecond)
			defer tick.Stop()
			for seq := 0; ctx.Err() == nil; seq++ {
				sctx, cancel := context.WithTimeout(ctx, 20*time.Second)
				_, err := s.Send(sctx, event{Key: k, Seq: seq})
				cancel()
				l.log.mu.Lock()
				if err == nil {
					l.log.sent = append(l.log.sent, acked{key: k, seq: seq, at: time.Now()})
				} else if ctx.Err() == nil {
					l.log.fails++
				}
				l.log.mu.Unlock()
				select {
				case <-ctx.Done():
				case <-tick.C:
				}
			}
		}()
	}
	l.enqueue(t, 0, 100)
	redistest.Eventually(t, 20*time.Second, "processing under load", func() bool { return l.processed() > 500 })
	redistest.Eventually(t, 20*time.Second, "the tasks enqueued before the failover run", func() bool { return l.allRan(0, 100) })
	return l
}

// enqueue enqueues the tasks from..to-1, trying again while the master is
// down.
func (l *sentinelLoad) enqueue(t *testing.T, from, to int) {
	t.Helper()
	var ps []int
	for n := from; n < to; n++ {
		ps = append(ps, n)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for {
		_, err := l.q.EnqueueMany(ctx, ps)
		if err == nil {
			return
		}
		if ctx.Err() != nil {
			t.Fatalf("enqueue: %v", err)
		}
		time.Sleep(50 * time.Millisecond) // the master is down: an enqueue fails until the promotion
	}
}

func (l *sentinelLoad) processed() int {
	l.log.mu.Lock()
	defer l.log.mu.Unlock()
	return len(l.log.done)
}

func (l *sentinelLoad) allRan(from, to int) bool {
	for n := from; n < to; n++ {
		if _, ok := l.ran.Load(n); !ok {
			return false
		}
	}
	return true
}

// sentAfter reports whether a send acknowledged after at is processed.
func (l *sentinelLoad) processedSentAfter(at time.Time) bool {
	l.log.mu.Lock()
	defer l.log.mu.Unlock()
	after := map[string]bool{}
	for _, a := range l.log.sent {
		if a.at.After(at) {
			after[fmt.Sprintf("%s/%d", a.key, a.seq)] = true
		}
	}
	for _, p := range l.log.done {
		if after[fmt.Sprintf("%s/%d", p.key, p.seq)] {
			return true
		}
	}
	return false
}

// check stops the producers, waits for every acknowledged send to be
// processed but those lost says the failover may have lost, and checks the
// order per key; then it waits for the tasks from..to-1 to run and stops the
// workers. It returns how many sends were lost and how many events were
// delivered again.
func (l *sentinelLoad) check(t *testing.T, lost func(acked) bool, from, to int) (sent, lostN, dups int) {
	t.Helper()
	l.stop()
	l.log.mu.Lock()
	all := slices.Clone(l.log.sent)
	l.log.mu.Unlock()
	var kept, mayLose []acked
	for _, a := range all {
		if lost(a) {
			mayLose = append(mayLose, a)
		} else {
			kept = append(kept, a)
		}
	}
	for _, a := range l.log.unprocessed(kept, 30*time.Second) {
		t.Errorf("record %s/%d (acknowledged at %s) not processed", a.key, a.seq, a.at.Format(time.StampMicro))
	}
	lostN = len(l.log.unprocessed(mayLose, 0))
	redistest.Eventually(t, 30*time.Second, "the tasks enqueued after the promotion run", func() bool { return l.allRan(from, to) })
	for _, w := range []*worker{l.w1, l.w2} {
		if err := w.stop(t); err != nil {
			t.Fatalf("worker: %v", err)
		}
	}
	sentAt := map[string]acked{}
	for _, a := range all {
		sentAt[fmt.Sprintf("%s/%d", a.key, a.seq)] = a
	}
	dups = checkKeyOrder(t, l.log.processed(), func(key string, seq int) bool {
		a, ok := sentAt[fmt.Sprintf("%s/%d", key, seq)]
		return !ok || lost(a) // never acknowledged, or lost in the failover
	})
	return len(all), lostN, dups
}

// Redis Sentinel: a master with a replica and a sentinel, a producer per key
// sending steadily through a failover client, two workers processing the
// stream and running a task queue. The master is killed (SIGKILL); the
// sentinel promotes the replica. Then sends succeed again, every record
// Send acknowledged is processed at least once and in order per key (but
// those the master acknowledged in the moments before its death and had
// not replicated), and the workers run the tasks enqueued before the kill
// and after the promotion: their own connections (leat's runtime clients,
// copies of the application's) follow the failover too.
func TestSentinelFailover(t *testing.T) {
	if testing.Short() {
		t.Skip("sentinel failover test")
	}
	t.Parallel()
	sn := redistest.StartSentinel(t)
	l := startSentinelLoad(t, sn)

	killedAt := sn.KillMaster()
	promotedAt := sn.WaitPromoted(t, 30*time.Second)
	t.Logf("promoted %s after the kill", promotedAt.Sub(killedAt))
	l.enqueue(t, 100, 200)
	redistest.Eventually(t, 30*time.Second, "sends acknowledged after the promotion", func() bool {
		l.log.mu.Lock()
		defer l.log.mu.Unlock()
		return len(l.log.sent) > 0 && l.log.sent[len(l.log.sent)-1].at.After(promotedAt.Add(time.Second))
	})
	// acknowledged by the master in its last moments, not replicated before its death
	lost := func(a acked) bool { return a.at.Before(killedAt) && killedAt.Sub(a.at) < replicationLag }
	sent, lostN, dups := l.check(t, lost, 100, 200)
	t.Logf("%d records acknowledged, %d lost with the master's last writes, %d redelivered", sent, lostN, dups)
}

// A graceful failover (SENTINEL FAILOVER) whose old master stays up and
// writable and never becomes a replica, as one cut off from the sentinels
// but not from its clients: leat's own connections leave it for the new
// master once the sentinel names that one, as the application's client
// does, rather than stay with the old master for as long as it keeps them.
// The records sent after the promotion are processed, the tasks enqueued
// after it run, and every record acknowledged is processed in order per
// key, but those that reached the old master during the failover.
func TestSentinelGracefulFailover(t *testing.T) {
	if testing.Short() {
		t.Skip("sentinel failover test")
	}
	t.Parallel()
	sn := redistest.StartSentinelStubbornMaster(t)
	l := startSentinelLoad(t, sn)

	askedAt := sn.Failover(t)
	promotedAt := sn.WaitPromoted(t, 30*time.Second)
	t.Logf("promoted %s after the request", promotedAt.Sub(askedAt))
	// The application's client moves when the sentinel announces the new
	// master, a moment after the promotion: what it wrote until then went
	// to the old master, and stays there.
	redistest.Eventually(t, 30*time.Second, "the application's client on the new master", func() bool {
		return redistest.ServerOf(l.sender) == sn.Replica.Addr
	})
	movedAt := time.Now()
	t.Logf("the application's client moved %s after the promotion", movedAt.Sub(promotedAt))
	l.enqueue(t, 100, 200)
	redistest.Eventually(t, 30*time.Second, "a record sent after the move processed", func() bool { return l.processedSentAfter(movedAt) })
	t.Logf("processing on the new master %s after the move", time.Since(movedAt))
	// written to the old master: not replicated when the failover began,
	// or written there after
	lost := func(a acked) bool { return a.at.After(askedAt.Add(-replicationLag)) && a.at.Before(movedAt) }
	sent, lostN, dups := l.check(t, lost, 100, 200)
	t.Logf("%d records acknowledged, %d lost with the old master, %d redelivered", sent, lostN, dups)
}

// A RedisURL naming a master with master_name makes the App a Sentinel
// client: it asks the sentinel for the master, processes there, and goes on
// with the new master after a failover.
func TestSentinelURL(t *testing.T) {
	if testing.Short() {
		t.Skip("sentinel test")
	}
	t.Parallel()
	sn := redistest.StartSentinel(t)
	url := "redis://" + sn.Addr + "?master_name=" + redistest.SentinelMaster + "&addr=127.0.0.1:1" // a sentinel that is down is passed over
	if !app.IsSentinelURL(url) || app.IsClusterURL(url) {
		t.Fatalf("%s: a Sentinel URL, not a cluster URL", url)
	}
	processThroughFailover(t, sn, app.Config{RedisURL: url})
}

// A rediss:// Sentinel URL with the App's TLS settings reaches the
// sentinel and the master with TLS, and so do leat's own connections,
// through a failover too: one whose old master stays up and keeps its
// clients, which leat's connections leave only by asking the sentinel
// where the master is (over TLS).
func TestSentinelURLWithTLS(t *testing.T) {
	if testing.Short() {
		t.Skip("sentinel test")
	}
	t.Parallel()
	sn := redistest.StartSentinelTLS(t, true)
	processThroughFailover(t, sn, app.Config{
		RedisURL: "rediss://" + sn.Addr + "?master_name=" + redistest.SentinelMaster,
		TLS:      app.TLSConfig{CAFile: sn.TLS.CA},
	})
}

// processThroughFailover runs an App of cfg (its RedisURL a Sentinel URL of
// sn) with a processor: records sent are processed, and so are those sent
// after a failover, once the App's client is on the new master.
func processThroughFailover(t *testing.T, sn *redistest.Sentinel, cfg app.Config) {
	t.Helper()
	cfg.Name, cfg.Logger, cfg.Processing = "shop", testLogger(), fastOptions()
	a, err := app.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	if c, ok := a.Client().(*redis.Client); !ok || c.Options().Addr != "FailoverClient" {
		t.Fatalf("the app's client is %T, want a Sentinel client", a.Client())
	}
	s, err := stream.Declare[event](a, "events", stream.KeyField("key"), stream.Partitions(4))
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	seen := map[int]bool{}
	if err := app.Process(a, s, "p", func(ctx context.Context, events *stream.Events[event]) error {
		for e := range events.All() {
			mu.Lock()
			seen[e.Record.Seq] = true
			mu.Unlock()
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	w := startWorker(t, a)
	send := func(from, to int) {
		t.Helper()
		for n := from; n < to; n++ {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			_, err := s.Send(ctx, event{Key: fmt.Sprint(n % 7), Seq: n})
			cancel()
			if err != nil {
				t.Fatalf("send %d: %v", n, err)
			}
		}
	}
	processed := func(to int) func() bool {
		return func() bool {
			mu.Lock()
			defer mu.Unlock()
			for n := range to {
				if !seen[n] {
					return false
				}
			}
			return true
		}
	}
	send(0, 50)
	redistest.Eventually(t, 20*time.Second, "the records processed", processed(50))

	sn.Failover(t)
	sn.WaitPromoted(t, 30*time.Second)
	redistest.Eventually(t, 10*time.Second, "the App's client on the new master", func() bool {
		return redistest.ServerOf(a.Client()) == sn.Replica.Addr
	})
	send(50, 100)
	redistest.Eventually(t, 20*time.Second, "the records sent after the failover processed", processed(100))
	if err := w.stop(t); err != nil {
		t.Fatal(err)
	}
}

// What leat cannot do through Sentinel is refused by New.
func TestSentinelConfigErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		cfg  app.Config
		want string
	}{
		{app.Config{RedisURL: "redis://h:26379?master_name="}, "master_name is empty"},
		{app.Config{RedisURL: "redis://h:26379?master_name=m&replica_only=t"}, "replica_only sends commands to replicas"},
		{app.Config{RedisURL: "redis://h:26379?master_name=m&route_randomly=true"}, "route_randomly sends commands to replicas"},
		{app.Config{RedisURL: "unix:///tmp/s.sock?master_name=m"}, "redis:// or rediss://"},
		{app.Config{RedisURL: "redis://h:26379?master_name=m&nosuch=1"}, "unexpected option: nosuch"},
		{app.Config{RedisURL: "redis://h:26379?master_name=m", Cluster: true}, "a master and its sentinels are not a cluster"},
		{app.Config{RedisURL: "redis://h:26379?master_name=m", TLS: app.TLSConfig{ServerName: "h"}}, "rediss://"},
	} {
		tc.cfg.Name = "shop"
		if _, err := app.New(tc.cfg); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("New(%+v) = %v, want an error with %q", tc.cfg, err, tc.want)
		}
	}
	// replica_only=false is no reason to refuse.
	a, err := app.New(app.Config{Name: "shop", RedisURL: "redis://h:26379?master_name=m&replica_only=false"})
	if err != nil {
		t.Fatal(err)
	}
	a.Close()
}
