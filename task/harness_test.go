package task_test

import (
	"context"
	"io"
	"log/slog"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/leatdev/leat/app"
	"github.com/leatdev/leat/internal/tools/redistest"
	"github.com/redis/go-redis/v9"
)

// env is one test's Redis client and key prefix, shared by its apps.
type env struct {
	t      *testing.T
	client *redis.Client
	prefix string
}

func newEnv(t *testing.T) *env {
	t.Parallel()
	c, prefix := redistest.Client(t)
	return &env{t: t, client: c, prefix: prefix}
}

func testLogger() *slog.Logger {
	if os.Getenv("LEAT_TEST_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

// app returns an App of the test named shop with worker ID id and a
// leader lease of a second, so that leadership moves fast.
func (e *env) app(id string) *app.App { return e.appLease(id, time.Second) }

// appLease is app with the given leader lease (0: the default). A longer
// lease keeps a worker leader through CPU starvation on a loaded machine.
func (e *env) appLease(id string, lease time.Duration) *app.App {
	e.t.Helper()
	a, err := app.New(app.Config{
		Name: "shop", Client: e.client, KeyPrefix: e.prefix, WorkerID: id, Logger: testLogger(),
		LeaderLease: lease,
	})
	if err != nil {
		e.t.Fatal(err)
	}
	return a
}

// run runs a worker of a until the returned stop is called (or the test
// ends) and returns stop, which waits for the worker and returns its error.
func (e *env) run(a *app.App) (stop func() error) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	var once sync.Once
	var err error
	stop = func() error {
		once.Do(func() {
			cancel()
			select {
			case err = <-done:
			case <-time.After(30 * time.Second):
				e.t.Errorf("worker did not stop")
			}
		})
		return err
	}
	e.t.Cleanup(func() { _ = stop() })
	return stop
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}
