package app_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/leatdev/leat/app"
	"github.com/leatdev/leat/internal/tools/redistest"
	"github.com/leatdev/leat/stream"
	"github.com/redis/go-redis/v9"
)

// sideWriter is a processor that writes to Redis through a proxy that a test
// freezes: a dependency of the processor's own, like a failing-over Redis.
type sideWriter struct {
	proxy  *redistest.Proxy
	client *redis.Client
	prefix string
	calls  atomic.Int64 // processor calls
	fails  atomic.Int64 // failed writes
}

func newSideWriter(t *testing.T, prefix string) *sideWriter {
	proxy := redistest.NewProxy(t, redistest.URL(t))
	opt, err := redis.ParseURL(proxy.URL())
	if err != nil {
		t.Fatal(err)
	}
	// No retries of go-redis's own, and short timeouts: the processor sees
	// the outage at once.
	opt.MaxRetries, opt.ReadTimeout, opt.WriteTimeout, opt.DialTimeout = -1, 200*time.Millisecond, 200*time.Millisecond, 200*time.Millisecond
	c := redis.NewClient(opt)
	t.Cleanup(func() { c.Close() })
	return &sideWriter{proxy: proxy, client: c, prefix: prefix}
}

// process counts each event in Redis through the proxy, then records it.
func (w *sideWriter) process(r *recorder) func(context.Context, *stream.Events[event]) error {
	return func(ctx context.Context, events *stream.Events[event]) error {
		w.calls.Add(1)
		for e := range events.All() {
			if err := w.client.Incr(ctx, w.prefix+":seen:"+e.Record.Key).Err(); err != nil {
				w.fails.Add(1)
				return err
			}
			r.add(e)
		}
		return nil
	}
}

// With the default options (halt, no retries), a processor whose own Redis
// writes fail for a while, as in a failover, is retried in place: the
// worker keeps going, and every event is processed once, in order.
func TestTransientOutageDoesNotHalt(t *testing.T) {
	t.Parallel()
	env := newEnv(t)
	a, s := env.newApp(2, nil)
	side := newSideWriter(t, env.prefix)
	r := newRecorder()
	if err := app.Process(a, s, "p", side.process(r)); err != nil {
		t.Fatal(err)
	}
	w := startWorker(t, a)
	keys := []string{"a", "b", "c", "d"}
	sent := sendEvents(t, s, keys, 5, 0)
	redistest.Eventually(t, 20*time.Second, "the first events", func() bool { return r.count() == len(sent) })

	side.proxy.Freeze()
	sent = append(sent, sendEvents(t, s, keys, 5, 100)...)
	redistest.Eventually(t, 20*time.Second, "failed writes during the outage", func() bool { return side.fails.Load() >= 3 })
	side.proxy.Thaw()
	redistest.Eventually(t, 30*time.Second, "every event after the outage", func() bool { return r.count() == len(sent) })
	select {
	case err := <-w.done:
		t.Fatalf("worker stopped: %v", err)
	default:
	}
	if err := w.stop(t); err != nil {
		t.Fatal(err)
	}
	r.exactlyOnce(t, sent)
	r.inOrder(t, false)
}

// A failure that is not transient halts at once under the default options,
// whether the processor's own (errBoom) or a Redis reply that says the
// request is wrong (WRONGTYPE); with NoTransientRetries, a transient one
// does too; and once TransientRetries' time is up, the policy applies.
func TestTransientRetryLimits(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		opts    []app.ProcessorOption
		prepare func(*sideWriter)
		want    func(error) bool
		once    bool // the processor is called once: no retry
	}{
		{"wrong type", nil, func(w *sideWriter) { w.client.HSet(context.Background(), w.prefix+":seen:a", "f", "v") }, isWrongType, true},
		{"NoTransientRetries", []app.ProcessorOption{app.NoTransientRetries()}, func(w *sideWriter) { w.proxy.Freeze() }, stream.IsTransient, true},
		{"time up", []app.ProcessorOption{app.TransientRetries(600*time.Millisecond, 10*time.Millisecond, 50*time.Millisecond)},
			func(w *sideWriter) { w.proxy.Freeze() }, stream.IsTransient, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			env := newEnv(t)
			a, s := env.newApp(1, nil)
			side := newSideWriter(t, env.prefix)
			tc.prepare(side)
			r := newRecorder()
			if err := app.Process(a, s, "p", side.process(r), tc.opts...); err != nil {
				t.Fatal(err)
			}
			sendEvents(t, s, []string{"a"}, 3, 0)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			err := a.Run(ctx)
			side.proxy.Thaw()
			if !errors.Is(err, app.ErrHalted) || !tc.want(err) {
				t.Fatalf("Run = %v, want a halt with the processor's error", err)
			}
			if calls := side.calls.Load(); (calls == 1) != tc.once {
				t.Errorf("%d processor calls; want one: %t", calls, tc.once)
			}
			if r.count() != 0 {
				t.Errorf("%d events processed", r.count())
			}
		})
	}
	t.Run("own error", func(t *testing.T) {
		t.Parallel()
		env := newEnv(t)
		a, s := env.newApp(1, nil)
		var calls atomic.Int64
		if err := app.Process(a, s, "p", func(ctx context.Context, events *stream.Events[event]) error {
			calls.Add(1)
			for range events.All() {
				return errBoom
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		sendEvents(t, s, []string{"a"}, 1, 0)
		if err := a.Run(t.Context()); !errors.Is(err, errBoom) || !errors.Is(err, app.ErrHalted) {
			t.Fatalf("Run = %v", err)
		}
		if calls.Load() != 1 {
			t.Errorf("%d calls, want 1", calls.Load())
		}
	})
}

func isWrongType(err error) bool { return strings.Contains(err.Error(), "WRONGTYPE") }

// Retries of a transient failure end when the worker stops: Run returns
// without a halt, and the events stay pending for the next owner.
func TestTransientRetryEndsWithTheWorker(t *testing.T) {
	t.Parallel()
	env := newEnv(t)
	a, s := env.newApp(1, nil)
	side := newSideWriter(t, env.prefix)
	r := newRecorder()
	if err := app.Process(a, s, "p", side.process(r)); err != nil {
		t.Fatal(err)
	}
	side.proxy.Freeze()
	defer side.proxy.Thaw()
	sendEvents(t, s, []string{"a"}, 2, 0)
	w := startWorker(t, a)
	redistest.Eventually(t, 20*time.Second, "retries", func() bool { return side.calls.Load() >= 3 })
	if err := w.stop(t); err != nil {
		t.Fatalf("Run = %v, want nil", err)
	}
	if n := pendingCount(t, env, s, "p"); n != 2 {
		t.Errorf("%d pending, want both events (read, never acknowledged)", n)
	}
	if r.count() != 0 {
		t.Errorf("%d events processed", r.count())
	}
}
