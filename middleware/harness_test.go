package middleware_test

import (
	"context"
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

// event is the record type of the tests.
type event struct {
	Key string `msgpack:"key"`
	Seq int    `msgpack:"seq"`
}

// env is one test's Redis client and key prefix, shared by its workers.
type env struct {
	t      testing.TB
	client *redis.Client
	prefix string
}

func newEnv(t testing.TB) *env {
	c, prefix := redistest.Client(t)
	return &env{t: t, client: c, prefix: prefix}
}

func testLogger() *slog.Logger {
	if os.Getenv("LEAT_TEST_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

// newApp returns an App named shop with a stream "events" of n partitions.
func (e *env) newApp(partitions int, mod func(*app.Config)) (*app.App, *stream.Stream[event]) {
	e.t.Helper()
	cfg := app.Config{Name: "shop", Client: e.client, KeyPrefix: e.prefix, Logger: testLogger(),
		Processing:  executor.Options{LockExpiry: 2 * time.Second, ReadBlock: 100 * time.Millisecond, Grace: 2 * time.Second},
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
	cancel context.CancelFunc
	done   chan error
	once   sync.Once
	err    error
}

func startWorker(t testing.TB, a *app.App) *worker {
	ctx, cancel := context.WithCancel(context.Background())
	w := &worker{cancel: cancel, done: make(chan error, 1)}
	go func() { w.done <- a.Run(ctx) }()
	t.Cleanup(func() { w.stop(t) })
	return w
}

func (w *worker) stop(t testing.TB) error {
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

// send sends records to s.
func send(t testing.TB, s *stream.Stream[event], records ...event) {
	t.Helper()
	if _, err := s.SendMany(context.Background(), records); err != nil {
		t.Fatal(err)
	}
}

// counter is a set of named counts safe for concurrent use.
type counter struct {
	mu sync.Mutex
	n  map[string]int
}

func newCounter() *counter { return &counter{n: map[string]int{}} }

func (c *counter) add(k string) {
	c.mu.Lock()
	c.n[k]++
	c.mu.Unlock()
}

func (c *counter) get(k string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n[k]
}
