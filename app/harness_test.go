package app_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/leatdev/leat/app"
	"github.com/leatdev/leat/executor"
	"github.com/leatdev/leat/internal/tools/redistest"
	"github.com/leatdev/leat/stream"
	"github.com/redis/go-redis/v9"
)

// event is the record type of the runtime tests.
type event struct {
	Key string `msgpack:"key"`
	Seq int    `msgpack:"seq"`
}

// env is one test's Redis client and key prefix, shared by its workers.
type env struct {
	t      *testing.T
	client *redis.Client
	prefix string
}

func newEnv(t *testing.T) *env {
	c, prefix := redistest.Client(t)
	return &env{t: t, client: c, prefix: prefix}
}

func testLogger() *slog.Logger {
	if os.Getenv("LEAT_TEST_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

// fastOptions are processor options that keep failure tests short.
func fastOptions() executor.Options {
	return executor.Options{LockExpiry: 2 * time.Second, ReadBlock: 200 * time.Millisecond, Grace: 2 * time.Second}
}

// newApp returns an App of the test named shop, with streams "events" of n
// partitions.
func (e *env) newApp(partitions int, mod func(*app.Config)) (*app.App, *stream.Stream[event]) {
	e.t.Helper()
	cfg := app.Config{Name: "shop", Client: e.client, KeyPrefix: e.prefix, Logger: testLogger(), Processing: fastOptions(),
		LeaderLease: 2 * time.Second}
	if mod != nil {
		mod(&cfg)
	}
	a, err := app.New(cfg)
	if err != nil {
		e.t.Fatal(err)
	}
	s, err := stream.Declare[event](a, "events", stream.KeyField("key"), stream.Partitions(partitions))
	if err != nil {
		e.t.Fatal(err)
	}
	return a, s
}

// worker runs a.Run in the background; stop ends it and returns its error.
type worker struct {
	a      *app.App
	cancel context.CancelFunc
	done   chan error
	once   sync.Once
	err    error
}

func startWorker(t *testing.T, a *app.App) *worker {
	ctx, cancel := context.WithCancel(context.Background())
	w := &worker{a: a, cancel: cancel, done: make(chan error, 1)}
	go func() { w.done <- a.Run(ctx) }()
	t.Cleanup(func() { w.stop(t) })
	return w
}

func (w *worker) stop(t *testing.T) error {
	w.once.Do(func() {
		w.cancel()
		select {
		case w.err = <-w.done:
		case <-time.After(30 * time.Second):
			t.Errorf("worker did not stop within 30s")
		}
	})
	return w.err
}

// recorder records what processors saw.
type recorder struct {
	mu     sync.Mutex
	seen   map[string]int   // "key/seq" -> times processed
	order  map[string][]int // key -> seqs in processing order
	parts  map[string]int   // key -> partition
	events []*stream.Event[event]
}

func newRecorder() *recorder {
	return &recorder{seen: map[string]int{}, order: map[string][]int{}, parts: map[string]int{}}
}

func (r *recorder) add(e *stream.Event[event]) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.seen[fmt.Sprintf("%s/%d", e.Record.Key, e.Record.Seq)]++
	r.order[e.Record.Key] = append(r.order[e.Record.Key], e.Record.Seq)
	r.parts[e.Record.Key] = e.Partition
	r.events = append(r.events, e)
}

func (r *recorder) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.seen)
}

func (r *recorder) total() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.events)
}

// exactlyOnce fails t unless every sent event was processed exactly once.
func (r *recorder) exactlyOnce(t *testing.T, sent []event) {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, s := range sent {
		if n := r.seen[fmt.Sprintf("%s/%d", s.Key, s.Seq)]; n != 1 {
			t.Errorf("event %s/%d processed %d times", s.Key, s.Seq, n)
		}
	}
	if len(r.seen) != len(sent) {
		t.Errorf("processed %d distinct events, sent %d", len(r.seen), len(sent))
	}
}

// inOrder fails t unless each key's events were processed in send order
// (after removing redeliveries when dedup is set).
func (r *recorder) inOrder(t *testing.T, dedup bool) {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	for k, seqs := range r.order {
		last := -1
		seen := map[int]bool{}
		for _, s := range seqs {
			if dedup && seen[s] {
				continue
			}
			seen[s] = true
			if s <= last {
				t.Errorf("key %s: event %d processed after %d (order %v)", k, s, last, seqs)
				return
			}
			last = s
		}
	}
}

func sendEvents(t *testing.T, s *stream.Stream[event], keys []string, perKey int, seqBase int) []event {
	t.Helper()
	var evs []event
	for i := range perKey {
		for _, k := range keys {
			evs = append(evs, event{Key: k, Seq: seqBase + i})
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := s.SendMany(ctx, evs); err != nil {
		t.Fatal(err)
	}
	return evs
}

type redisXAdd struct {
	key  string
	vals []any
}

func (x redisXAdd) args() *redis.XAddArgs { return &redis.XAddArgs{Stream: x.key, Values: x.vals} }
