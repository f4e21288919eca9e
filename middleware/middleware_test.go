package middleware_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/leatdev/leat/app"
	"github.com/leatdev/leat/internal/tools/redistest"
	"github.com/leatdev/leat/middleware"
	"github.com/leatdev/leat/stream"
)

// tracer is a middleware writing name> before and <name after next.
func tracer(name string, log *[]string, mu *sync.Mutex) middleware.Middleware {
	return func(next middleware.Handler) middleware.Handler {
		return func(ctx context.Context, m *middleware.Message) error {
			mu.Lock()
			*log = append(*log, name+">")
			mu.Unlock()
			err := next(ctx, m)
			mu.Lock()
			*log = append(*log, "<"+name)
			mu.Unlock()
			return err
		}
	}
}

func TestChainOrder(t *testing.T) {
	var (
		mu  sync.Mutex
		log []string
	)
	h := middleware.Chain(func(context.Context, *middleware.Message) error {
		log = append(log, "h")
		return nil
	}, tracer("a", &log, &mu), nil, tracer("b", &log, &mu))
	if err := h(context.Background(), &middleware.Message{Entries: []middleware.Entry{{ID: "1-0"}}}); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(log, " "); got != "a> b> h <b <a" {
		t.Fatalf("order %q", got)
	}
}

// The app's middleware wraps the processor's, which wrap the loop body; an
// event is acknowledged when the chain returns.
func TestAppOrderAndAck(t *testing.T) {
	e := newEnv(t)
	var (
		mu  sync.Mutex
		log []string
	)
	a, s := e.newApp(1, func(c *app.Config) {
		c.Middleware = []middleware.Middleware{tracer("app1", &log, &mu), tracer("app2", &log, &mu)}
	})
	var msgs []*middleware.Message
	probe := func(next middleware.Handler) middleware.Handler {
		return func(ctx context.Context, m *middleware.Message) error {
			mu.Lock()
			msgs = append(msgs, m)
			mu.Unlock()
			return next(ctx, m)
		}
	}
	done := make(chan struct{}, 10)
	err := app.Process(a, s, "p", func(ctx context.Context, events *stream.Events[event]) error {
		for ev := range events.All() {
			mu.Lock()
			log = append(log, fmt.Sprintf("body%d", ev.Record.Seq))
			mu.Unlock()
			if ev.Context().Value(bodyCtxKey{}) != "set" {
				t.Errorf("the loop body does not get the chain's context")
			}
			done <- struct{}{}
		}
		return nil
	}, app.Use(tracer("p1", &log, &mu), probe), app.Use(setCtx, tracer("p2", &log, &mu)))
	if err != nil {
		t.Fatal(err)
	}
	startWorker(t, a)
	send(t, s, event{Key: "k", Seq: 1})
	<-done
	redistest.Eventually(t, 5*time.Second, "the event acknowledged", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(log) == 9
	})
	mu.Lock()
	got := strings.Join(log, " ")
	m := msgs[0]
	mu.Unlock()
	if want := "app1> app2> p1> p2> body1 <p2 <p1 <app2 <app1"; got != want {
		t.Fatalf("order %q, want %q", got, want)
	}
	en := m.First()
	if m.Stream != "events" || m.Processor != "p" || m.Partition != 0 || m.Token == 0 || m.Batch || m.Fence == nil ||
		en.Deliveries != 1 || string(en.Key) != "k" || len(en.Data) == 0 || en.Record.(event).Seq != 1 || en.ID == "" {
		t.Fatalf("message %+v, entry %+v", m, en)
	}
	redistest.Eventually(t, 5*time.Second, "no pending entries", func() bool { return pending(t, e, a) == 0 })
}

type bodyCtxKey struct{}

func setCtx(next middleware.Handler) middleware.Handler {
	return func(ctx context.Context, m *middleware.Message) error {
		return next(context.WithValue(ctx, bodyCtxKey{}, "set"), m)
	}
}

// pending returns the number of pending entries of processor p.
func pending(t testing.TB, e *env, a *app.App) int64 {
	keys, err := e.client.Keys(context.Background(), e.prefix+":*").Result()
	if err != nil {
		t.Fatal(err)
	}
	var n int64
	for _, k := range keys {
		if typ, _ := e.client.Type(context.Background(), k).Result(); typ != "stream" {
			continue
		}
		groups, _ := e.client.XInfoGroups(context.Background(), k).Result()
		for _, g := range groups {
			if g.Name == "p" {
				n += g.Pending
			}
		}
	}
	return n
}

// The loop body's error reaches the chain; the chain's error goes to the
// retries and the failure policy; a message the chain skips is
// acknowledged without reaching the loop body; in a batch, the body sees the
// entries the chain lets through.
func TestChainErrorsSkipsAndBatches(t *testing.T) {
	e := newEnv(t)
	a, s := e.newApp(1, nil)
	errBoom := errors.New("boom")
	var (
		mu       sync.Mutex
		seenErrs []error
		bodies   [][]int
	)
	record := func(next middleware.Handler) middleware.Handler {
		return func(ctx context.Context, m *middleware.Message) error {
			err := next(ctx, m)
			mu.Lock()
			seenErrs = append(seenErrs, err)
			mu.Unlock()
			return err
		}
	}
	// Drops odd records from batches; skips seq 100 altogether.
	filter := func(next middleware.Handler) middleware.Handler {
		return func(ctx context.Context, m *middleware.Message) error {
			if m.First().Record.(event).Seq == 100 {
				return nil
			}
			keep := slices.DeleteFunc(slices.Clone(m.Entries), func(e middleware.Entry) bool { return e.Record.(event).Seq%2 == 1 })
			return next(ctx, &middleware.Message{Stream: m.Stream, Processor: m.Processor, Partition: m.Partition, Token: m.Token,
				Batch: m.Batch, Entries: keep, Fence: m.Fence})
		}
	}
	failed := 0
	err := app.Process(a, s, "p", func(ctx context.Context, events *stream.Events[event]) error {
		for b := range events.Batches(4, 500*time.Millisecond) {
			var seqs []int
			for _, ev := range b {
				seqs = append(seqs, ev.Record.Seq)
			}
			mu.Lock()
			bodies = append(bodies, seqs)
			mu.Unlock()
			if seqs[0] == 10 && failed == 0 {
				failed++
				return errBoom
			}
		}
		return nil
	}, app.Use(record, filter), app.Retries(3), app.Backoff(time.Millisecond, time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	startWorker(t, a)
	send(t, s, event{Key: "k", Seq: 100})
	redistest.Eventually(t, 10*time.Second, "the skipped event acknowledged", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(seenErrs) == 1 && pending(t, e, a) == 0
	})
	send(t, s, event{Key: "k", Seq: 10}, event{Key: "k", Seq: 11}, event{Key: "k", Seq: 12}, event{Key: "k", Seq: 13})
	redistest.Eventually(t, 10*time.Second, "all acknowledged", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(bodies) >= 2 && pending(t, e, a) == 0
	})
	mu.Lock()
	defer mu.Unlock()
	if fmt.Sprint(bodies) != "[[10 12] [10 12]]" {
		t.Fatalf("bodies %v", bodies)
	}
	if len(seenErrs) != 3 || seenErrs[0] != nil || !errors.Is(seenErrs[1], errBoom) || seenErrs[2] != nil || len(bodies[0]) != 2 {
		t.Fatalf("errors seen by the chain: %v", seenErrs)
	}
}
