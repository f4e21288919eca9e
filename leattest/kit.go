package leattest

import (
	"context"
	"io"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/leatdev/leat/app"
	"github.com/leatdev/leat/executor"
	"github.com/leatdev/leat/internal/clock"
	"github.com/leatdev/leat/internal/rdb"
	"github.com/redis/go-redis/v9"
)

// Timings of the kit's apps: short, so tests stay fast. The leader lease
// is longer than the partition locks: a kit's app has one worker, whose
// leadership moves only when it stops (and a stop releases the lease),
// while each attempt to take or refresh it is bounded by a third of it, an
// in-process server under a loaded test machine answering in a few hundred
// milliseconds at worst; a lease of a second left a worker without its
// leader work (due retries unpromoted) for as long as that lasted.
const (
	lockExpiry  = time.Second
	leaderLease = 5 * time.Second
	readBlock   = 50 * time.Millisecond
	grace       = 2 * time.Second
)

// waitTimeout bounds every wait of the kit.
const waitTimeout = 20 * time.Second

// Kit is an in-process Redis server with the means to run apps on it and
// observe them. Create one per test with New.
type Kit struct {
	t      testing.TB
	srv    *miniredis.Miniredis
	client *redis.Client
	clock  *clock.Fake
	obs    *observer
}

// New starts a kit for t; everything is stopped when the test ends.
func New(t testing.TB) *Kit {
	t.Helper()
	srv := miniredis.NewMiniRedis()
	if err := srv.Start(); err != nil {
		t.Fatalf("leattest: start the in-process server: %v", err)
	}
	c := redis.NewClient(&redis.Options{Addr: srv.Addr(), DisableIdentity: true})
	k := &Kit{t: t, srv: srv, client: c, clock: clock.NewFake(time.Now()), obs: &observer{}}
	t.Cleanup(func() {
		_ = c.Close()
		srv.Close()
	})
	return k
}

// Client returns a client of the kit's server, for checking what a
// processor wrote.
func (k *Kit) Client() *redis.Client { return k.client }

// Config returns an app.Config for an app called name on the kit's server:
// short lock expiry, read block, grace period and leader lease, so tests
// run fast; warnings and errors go to the test's log; the kit's hooks record
// what processors do.
func (k *Kit) Config(name string) app.Config {
	return app.Config{
		Name:        name,
		Client:      k.client,
		Logger:      slog.New(slog.NewTextHandler(testWriter{k.t}, &slog.HandlerOptions{Level: slog.LevelWarn})),
		Processing:  executor.Options{LockExpiry: lockExpiry, ReadBlock: readBlock, Grace: grace},
		LeaderLease: leaderLease,
		Hooks:       []executor.Hook{k.obs},
	}
}

// App builds the app called "test" with setup (the app's own Setup, which
// declares its streams, processors and background tasks on the Config it
// is given; app.New when nil), on the kit's server and the kit's clock.
func (k *Kit) App(setup func(app.Config) (*app.App, error)) *app.App {
	k.t.Helper()
	return k.AppNamed("test", setup)
}

// AppNamed is App for an app called name.
func (k *Kit) AppNamed(name string, setup func(app.Config) (*app.App, error)) *app.App {
	k.t.Helper()
	if setup == nil {
		setup = app.New
	}
	a, err := setup(k.Config(name))
	if err != nil {
		k.t.Fatalf("leattest: setup: %v", err)
	}
	if err := clock.Attach(a, k.clock); err != nil {
		k.t.Fatalf("leattest: %v", err)
	}
	k.t.Cleanup(func() { _ = a.Close() })
	return a
}

// Worker is a worker of an app run by the kit.
type Worker struct {
	k       *Kit
	a       *app.App
	cancel  context.CancelFunc
	stopped chan struct{} // closed when Run returned
	err     error         // what Run returned
}

// Start runs a worker of a (a.Run) until Stop or the end of the test.
func (k *Kit) Start(a *app.App) *Worker {
	ctx, cancel := context.WithCancel(context.Background())
	w := &Worker{k: k, a: a, cancel: cancel, stopped: make(chan struct{})}
	go func() { w.err = a.Run(ctx); close(w.stopped) }()
	k.t.Cleanup(func() { _ = w.Stop() })
	return w
}

// Stop stops the worker gracefully and returns what Run returned.
func (w *Worker) Stop() error {
	w.cancel()
	select {
	case <-w.stopped:
		return w.err
	case <-time.After(waitTimeout):
		w.k.t.Errorf("leattest: the worker did not stop within %s", waitTimeout)
		return nil
	}
}

// Wait waits for the worker to stop by itself (a halt, for tests of the
// Halt policy) and returns what Run returned; it fails the test after 20s.
func (w *Worker) Wait() error {
	w.k.t.Helper()
	select {
	case <-w.stopped:
		return w.err
	case <-time.After(waitTimeout):
		w.k.t.Fatalf("leattest: the worker did not stop by itself within %s", waitTimeout)
		return nil
	}
}

// keys returns the key space of a.
func keysOf(a *app.App) rdb.KeySpace { return rdb.NewKeySpace(a.Config().KeyPrefix, a.Name()) }

type testWriter struct{ t testing.TB }

func (w testWriter) Write(b []byte) (int, error) {
	w.t.Helper()
	w.t.Log(string(b[:len(b)-min(1, len(b))]))
	return len(b), nil
}

var _ io.Writer = testWriter{}

// Failure is a processor failure the kit saw: before retries and policy.
type Failure struct {
	Stream, Processor string
	Partition         int
	Err               error
}

// observer records what the runtime reports through its hooks.
type observer struct {
	mu        sync.Mutex
	failures  []Failure
	processed map[string]int // "stream/processor" -> events acknowledged
	lockLost  int
}

func (o *observer) OnProcessorFailed(stream, processor string, partition int, err error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.failures = append(o.failures, Failure{stream, processor, partition, err})
}

func (o *observer) OnEventsProcessed(stream, processor string, _, events int, _ time.Duration) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.processed == nil {
		o.processed = map[string]int{}
	}
	o.processed[stream+"/"+processor] += events
}

func (o *observer) OnLockLost(string, string, int) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.lockLost++
}

// Failures returns the failures of processor (its name, or
// "stream/processor") so far, retries included, in order.
func (k *Kit) Failures(processor string) []Failure {
	k.obs.mu.Lock()
	defer k.obs.mu.Unlock()
	var out []Failure
	for _, f := range k.obs.failures {
		if f.Processor == processor || f.Stream+"/"+f.Processor == processor {
			out = append(out, f)
		}
	}
	return slices.Clone(out)
}

// Processed returns how many events processor (its name, or
// "stream/processor") processed successfully and acknowledged so far.
func (k *Kit) Processed(processor string) int {
	k.obs.mu.Lock()
	defer k.obs.mu.Unlock()
	n := 0
	for name, c := range k.obs.processed {
		if name == processor || len(name) > len(processor) && name[len(name)-len(processor)-1:] == "/"+processor {
			n += c
		}
	}
	return n
}

// LocksLost returns how many partition locks the kit's apps lost so far.
func (k *Kit) LocksLost() int {
	k.obs.mu.Lock()
	defer k.obs.mu.Unlock()
	return k.obs.lockLost
}
