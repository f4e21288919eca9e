package app_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/leatdev/leat/app"
	"github.com/leatdev/leat/executor"
	"github.com/leatdev/leat/internal/redistest"
	"github.com/leatdev/leat/stream"
	"github.com/leatdev/leat/task"
)

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
	opts := executor.Options{LockExpiry: 4 * time.Second, ReadBlock: 200 * time.Millisecond, Grace: 2 * time.Second}
	log := &failoverLog{inSend: map[string]time.Time{}}
	var ran sync.Map // task payloads run
	newApp := func(worker string) (*app.App, *stream.Stream[event], *task.Queue[int, int]) {
		a, err := app.New(app.Config{Name: "shop", Client: sn.Client(t), WorkerID: worker, Logger: testLogger(),
			Processing: opts, LeaderLease: 2 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		s, err := stream.Declare[event](a, "events", stream.KeyField("key"), stream.Partitions(8))
		if err != nil {
			t.Fatal(err)
		}
		if err := app.Process(a, s, "p", log.processor(worker, "events")); err != nil {
			t.Fatal(err)
		}
		q, err := task.Handle(a, "jobs", func(ctx context.Context, tk *task.Task[int]) (int, error) {
			ran.Store(tk.Payload, true)
			return tk.Payload, nil
		}, task.Visibility(3*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		return a, s, q
	}
	_, s, q := newApp("producer") // sends and enqueues only; never runs
	a1, _, _ := newApp("w1")
	a2, _, _ := newApp("w2")
	w1, w2 := startWorker(t, a1), startWorker(t, a2)

	ctx, stop := context.WithCancel(context.Background())
	var prod sync.WaitGroup
	t.Cleanup(func() { stop(); prod.Wait() })
	keys := make([]string, 8)
	for i := range keys {
		keys[i] = fmt.Sprintf("k%d", i)
	}
	for _, k := range keys {
		prod.Add(1)
		go func() {
			defer prod.Done()
			tick := time.NewTicker(5 * time.Millisecond)
			defer tick.Stop()
			for seq := 0; ctx.Err() == nil; seq++ {
				sctx, cancel := context.WithTimeout(ctx, 20*time.Second)
				_, err := s.Send(sctx, event{Key: k, Seq: seq})
				cancel()
				log.mu.Lock()
				if err == nil {
					log.sent = append(log.sent, acked{key: k, seq: seq, at: time.Now()})
				} else if ctx.Err() == nil {
					log.fails++
				}
				log.mu.Unlock()
				select {
				case <-ctx.Done():
				case <-tick.C:
				}
			}
		}()
	}
	enqueue := func(from, to int) {
		t.Helper()
		var ps []int
		for n := from; n < to; n++ {
			ps = append(ps, n)
		}
		ectx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		for {
			_, err := q.EnqueueMany(ectx, ps)
			if err == nil {
				return
			}
			if ectx.Err() != nil {
				t.Fatalf("enqueue: %v", err)
			}
			time.Sleep(50 * time.Millisecond) // the master is down: an enqueue fails until the promotion
		}
	}
	enqueue(0, 100)
	count := func() int {
		log.mu.Lock()
		defer log.mu.Unlock()
		return len(log.done)
	}
	redistest.Eventually(t, 20*time.Second, "processing under load", func() bool { return count() > 500 })
	redistest.Eventually(t, 20*time.Second, "the tasks enqueued before the kill run", func() bool {
		_, ok := ran.Load(99)
		return ok
	})

	killedAt := sn.KillMaster()
	promotedAt := sn.WaitPromoted(t, 30*time.Second)
	t.Logf("promoted %s after the kill", promotedAt.Sub(killedAt))
	enqueue(100, 200)
	redistest.Eventually(t, 30*time.Second, "sends acknowledged after the promotion", func() bool {
		log.mu.Lock()
		defer log.mu.Unlock()
		return len(log.sent) > 0 && log.sent[len(log.sent)-1].at.After(promotedAt.Add(time.Second))
	})
	stop()
	prod.Wait()

	log.mu.Lock()
	sent := slices.Clone(log.sent)
	log.mu.Unlock()
	lost := 0
	// acknowledged by the master in its last moments, not replicated before its death
	lostWithMaster := func(a acked) bool { return a.at.Before(killedAt) && killedAt.Sub(a.at) < replicationLag }
	for _, a := range log.unprocessed(sent, 30*time.Second) {
		if lostWithMaster(a) && killedAt.Sub(a.at) < replicationLag {
			lost++
			continue
		}
		t.Errorf("record %s/%d (acknowledged %s after the kill) not processed", a.key, a.seq, a.at.Sub(killedAt))
	}
	allRan := func() bool {
		for n := 100; n < 200; n++ {
			if _, ok := ran.Load(n); !ok {
				return false
			}
		}
		return true
	}
	redistest.Eventually(t, 30*time.Second, "the tasks enqueued after the promotion run", allRan)
	for _, w := range []*worker{w1, w2} {
		if err := w.stop(t); err != nil {
			t.Fatalf("worker: %v", err)
		}
	}
	sentAt := map[string]acked{}
	for _, a := range sent {
		sentAt[fmt.Sprintf("%s/%d", a.key, a.seq)] = a
	}
	dups := checkKeyOrder(t, log.processed(), func(key string, seq int) bool {
		a, ok := sentAt[fmt.Sprintf("%s/%d", key, seq)]
		return !ok || lostWithMaster(a) // never acknowledged, or lost with the master
	})
	t.Logf("%d records acknowledged, %d lost with the master's last writes, %d redelivered", len(sent), lost, dups)
}
