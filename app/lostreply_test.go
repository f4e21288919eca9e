package app_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/leatdev/leat/app"
	"github.com/leatdev/leat/executor"
	"github.com/leatdev/leat/internal/tools/redistest"
	"github.com/leatdev/leat/stream"
)

// A read of new entries whose reply is lost after Redis ran it (the link or
// the server failed in between) has taken the entries into the worker's
// pending list, where nothing else will ever find them while the worker
// holds the partition. The worker reads them again from its pending list
// before any newer entry, so they are processed in order and at once, not
// after the partition changed hands. The lock expiry is long, so only that
// can bring them back within the test's deadline.
func TestLostReadReply(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		before int // events sent, and processed, before the one whose read is cut
		batch  int // events sent with it, in one call
		cutAt  int // index of the marked event in the batch
	}{
		// The partition is idle: its first read after the wake-up.
		{"idle", 3, 20, 5},
		// A backlog larger than the buffer: the reads after the first.
		{"backlog", 0, 1500, 1200},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			proxy, direct, r := proxiedWorker(t, 1)

			sent := sendEvents(t, direct, []string{"a"}, tc.before, 0)
			redistest.Eventually(t, 20*time.Second, "the first events", func() bool { return r.count() == len(sent) })
			marker := fmt.Sprintf("cut-%s-%d", tc.name, time.Now().UnixNano())
			batch := make([]event, tc.batch)
			for i := range batch {
				batch[i] = event{Key: "a", Seq: tc.before + i}
				if i == tc.cutAt {
					batch[i].Key = marker
				}
			}
			proxy.CutReplies([]byte(marker), 1)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			if _, err := direct.SendMany(ctx, batch); err != nil {
				t.Fatal(err)
			}
			sent = append(sent, batch...)
			redistest.Eventually(t, 20*time.Second, "every event, the cut read's too", func() bool { return r.count() == len(sent) })
			if proxy.Cuts() != 1 {
				t.Fatalf("%d replies cut, want 1: the test did not cut a read", proxy.Cuts())
			}
			r.exactlyOnce(t, sent)
			r.inOrder(t, false)
			r.mu.Lock()
			defer r.mu.Unlock()
			var all []int
			for _, e := range r.events {
				all = append(all, e.Record.Seq)
			}
			for i := 1; i < len(all); i++ {
				if all[i] <= all[i-1] {
					t.Fatalf("processed out of order across keys: %d after %d", all[i], all[i-1])
				}
			}
		})
	}
}

// Replies lost at random on a worker's link (one reply chunk in 20: fenced
// reads and their transactions, wake-up reads, acknowledgements, lock
// refreshes, heartbeats, the leader's lease) while events flow to 8
// partitions: every event is processed, each key's in send order, long
// before the lock expiry (a minute here) would move a partition that a lost
// reply left stuck.
func TestLostRepliesUnderLoad(t *testing.T) {
	t.Parallel()
	proxy, direct, r := proxiedWorker(t, 8)
	keys := make([]string, 16)
	for i := range keys {
		keys[i] = fmt.Sprint("k", i)
	}
	sent := sendEvents(t, direct, keys, 1, 0)
	redistest.Eventually(t, 20*time.Second, "the first events", func() bool { return r.count() == len(sent) })
	proxy.CutEvery(20)
	for i := 1; i < 300; i++ {
		sent = append(sent, sendEvents(t, direct, keys, 1, i)...)
		time.Sleep(5 * time.Millisecond) // the load's shape: sends spread while replies are cut
	}
	proxy.CutEvery(0)
	redistest.Eventually(t, 20*time.Second, "every event", func() bool { return r.count() == len(sent) })
	if n := proxy.Cuts(); n < 10 {
		t.Fatalf("%d replies cut, want at least 10", n)
	}
	t.Logf("%d replies cut; %d events, %d handed out", proxy.Cuts(), len(sent), r.total())
	r.inOrder(t, true)
}

// proxiedWorker starts a worker of stream events (partitions partitions, a
// lock expiry of a minute) whose app's own client goes through a proxy,
// recording what its processor p sees; direct is the stream through a
// client of its own.
func proxiedWorker(t *testing.T, partitions int) (*redistest.Proxy, *stream.Stream[event], *recorder) {
	t.Helper()
	env := newEnv(t)
	proxy := redistest.NewProxy(t, redistest.URL(t))
	worker, s := env.newApp(partitions, func(c *app.Config) {
		c.Client, c.RedisURL = nil, proxy.URL() // the app's own client, through the proxy
		c.Processing = executor.Options{LockExpiry: time.Minute, ReadBlock: 200 * time.Millisecond, Grace: 2 * time.Second}
	})
	_, direct := env.newApp(partitions, nil)
	r := newRecorder()
	if err := app.Process(worker, s, "p", collect(r)); err != nil {
		t.Fatal(err)
	}
	startWorker(t, worker)
	return proxy, direct, r
}
