package middleware_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/leatdev/leat/app"
	"github.com/leatdev/leat/middleware"
	"github.com/leatdev/leat/task"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
)

type job struct {
	N int `json:"n"`
}

type done struct {
	Twice int    `json:"twice"`
	By    string `json:"by,omitempty"`
}

// record keeps what the middleware of a test saw, in order.
type record struct {
	mu   sync.Mutex
	seen []string
}

func (r *record) add(s string) {
	r.mu.Lock()
	r.seen = append(r.seen, s)
	r.mu.Unlock()
}

func (r *record) all() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.seen...)
}

// named records entering and leaving the chain under name, with the
// payload it saw going in and the result coming out.
func named(rec *record, name string) middleware.TaskMiddleware {
	return func(next middleware.TaskHandler) middleware.TaskHandler {
		return func(ctx context.Context, r *middleware.TaskRun) error {
			rec.add(name + " in " + string(r.Payload))
			err := next(ctx, r)
			res, _ := json.Marshal(r.Result)
			rec.add(name + " out " + string(res))
			return err
		}
	}
}

// waitInfo waits for task id to end and returns its status.
func waitInfo(t *testing.T, q *task.Queue[job, done], id string) *task.Info {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	in, err := q.Wait(ctx, id)
	if err != nil {
		t.Fatalf("task %s: %v", id, err)
	}
	return in
}

// The app's task middleware wraps the queue's, the first of each list
// outermost; each sees the run's payload before the handler and its result
// after; the handler decodes the payload the chain hands it, and what the
// chain leaves in Result is stored.
func TestTaskMiddlewareChain(t *testing.T) {
	e := newEnv(t)
	rec := &record{}
	a, _ := e.newApp(1, func(c *app.Config) {
		c.TaskMiddleware = []middleware.TaskMiddleware{named(rec, "app")}
	})
	double := func(next middleware.TaskHandler) middleware.TaskHandler {
		return func(ctx context.Context, r *middleware.TaskRun) error {
			var p job
			if err := json.Unmarshal(r.Payload, &p); err != nil {
				return err
			}
			p.N *= 10 // the handler sees the payload the chain hands it
			r.Payload, _ = json.Marshal(p)
			if err := next(ctx, r); err != nil {
				return err
			}
			d := r.Result.(done) // the handler's R
			d.By = "middleware"
			r.Result = d
			return nil
		}
	}
	var seen []int
	var mu sync.Mutex
	q, err := task.Handle(a, "jobs", func(ctx context.Context, tk *task.Task[job]) (done, error) {
		mu.Lock()
		seen = append(seen, tk.Payload.N)
		mu.Unlock()
		rec.add("handler")
		return done{Twice: 2 * tk.Payload.N}, nil
	}, task.Use(named(rec, "first"), double), task.Use(named(rec, "second")))
	if err != nil {
		t.Fatal(err)
	}
	startWorker(t, a)
	id, err := q.Enqueue(context.Background(), job{N: 3})
	if err != nil {
		t.Fatal(err)
	}
	in := waitInfo(t, q, id)
	if in.State != task.Succeeded || string(in.Result) != `{"twice":60,"by":"middleware"}` {
		t.Fatalf("state %s, result %s; want succeeded with the result the middleware changed", in.State, in.Result)
	}
	want := []string{
		`app in {"n":3}`, `first in {"n":3}`, `second in {"n":30}`, "handler",
		`second out {"twice":60}`, `first out {"twice":60,"by":"middleware"}`, `app out {"twice":60,"by":"middleware"}`,
	}
	if got := rec.all(); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("chain ran\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if len(seen) != 1 || seen[0] != 30 {
		t.Fatalf("handler saw payloads %v, want [30]", seen)
	}
}

// A middleware's error fails the attempt as a handler's would (retried,
// SkipRetry fails the task at once), a panic in a middleware is an error,
// and a middleware that does not call next ends the task with the result
// it set, the handler never running.
func TestTaskMiddlewareOutcomes(t *testing.T) {
	e := newEnv(t)
	a, _ := e.newApp(1, nil)
	var mu sync.Mutex
	ran := map[int]int{} // handler runs by payload
	guard := func(next middleware.TaskHandler) middleware.TaskHandler {
		return func(ctx context.Context, r *middleware.TaskRun) error {
			var p job
			_ = json.Unmarshal(r.Payload, &p)
			switch {
			case p.N == 1 && r.Attempt == 1:
				return errors.New("refused once")
			case p.N == 2:
				return task.SkipRetry(errors.New("never"))
			case p.N == 3 && r.Attempt == 1:
				panic("middleware panicked")
			case p.N == 4:
				r.Result = done{By: "cache"} // answered without the handler
				return nil
			case p.N == 5:
				return nil // skipped: a null result
			}
			return next(ctx, r)
		}
	}
	q, err := task.Handle(a, "jobs", func(ctx context.Context, tk *task.Task[job]) (done, error) {
		mu.Lock()
		ran[tk.Payload.N]++
		mu.Unlock()
		return done{Twice: 2 * tk.Payload.N}, nil
	}, task.Use(guard), task.Backoff(time.Millisecond, time.Millisecond), task.MaxRetries(3))
	if err != nil {
		t.Fatal(err)
	}
	startWorker(t, a)
	ids := map[int]string{}
	for n := 1; n <= 5; n++ {
		id, err := q.Enqueue(context.Background(), job{N: n})
		if err != nil {
			t.Fatal(err)
		}
		ids[n] = id
	}
	for _, c := range []struct {
		n        int
		state    task.State
		attempts int
		result   string
		err      string
		runs     int
	}{
		{1, task.Succeeded, 2, `{"twice":2}`, "", 1},
		{2, task.Failed, 1, "", "never", 0},
		{3, task.Succeeded, 2, `{"twice":6}`, "", 1},
		{4, task.Succeeded, 1, `{"twice":0,"by":"cache"}`, "", 0},
		{5, task.Succeeded, 1, `null`, "", 0},
	} {
		in := waitInfo(t, q, ids[c.n])
		mu.Lock()
		runs := ran[c.n]
		mu.Unlock()
		if in.State != c.state || in.Attempts != c.attempts || string(in.Result) != c.result ||
			!strings.Contains(in.Error, c.err) || runs != c.runs {
			t.Errorf("task %d: %s after %d attempts, result %s, error %q, handler ran %d times; want %s after %d, %s, %q, %d",
				c.n, in.State, in.Attempts, in.Result, in.Error, runs, c.state, c.attempts, c.result, c.err, c.runs)
		}
	}
	res, err := q.Result(context.Background(), ids[5])
	if err != nil || res != (done{}) {
		t.Fatalf("typed result of a null result: %+v, %v; want the zero result", res, err)
	}
}

// A trace context given at enqueue (task.Headers(InjectTrace(ctx, nil)))
// reaches the handler through TaskTracing, in a span per attempt whose
// parent is the enqueuer's; a failed attempt is recorded on its span.
func TestTaskTracingFromEnqueueToHandler(t *testing.T) {
	e := newEnv(t)
	a, _ := e.newApp(1, nil)
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	var mu sync.Mutex
	var got []trace.SpanContext
	var headers map[string]string
	q, err := task.Handle(a, "jobs", func(ctx context.Context, tk *task.Task[job]) (done, error) {
		mu.Lock()
		got = append(got, trace.SpanContextFromContext(ctx))
		headers = tk.Headers
		mu.Unlock()
		if tk.Attempt == 1 {
			return done{}, errors.New("first attempt fails")
		}
		return done{}, nil
	}, task.Use(middleware.TaskTracing(middleware.TracingOptions{TracerProvider: tp})),
		task.Backoff(time.Millisecond, time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	startWorker(t, a)
	ctx, sent := senderContext()
	id, err := q.Enqueue(ctx, job{N: 1}, task.Headers(middleware.InjectTrace(ctx, nil)), task.Headers(map[string]string{"tenant": "acme"}))
	if err != nil {
		t.Fatal(err)
	}
	if in := waitInfo(t, q, id); in.State != task.Succeeded || in.Headers["tenant"] != "acme" || in.Headers["traceparent"] == "" {
		t.Fatalf("state %s, headers %v; want succeeded with the enqueue's headers", in.State, in.Headers)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(got) != 2 || headers["tenant"] != "acme" {
		t.Fatalf("handler ran %d times with headers %v, want 2 with tenant acme", len(got), headers)
	}
	spans := rec.Ended()
	if len(spans) != 2 {
		t.Fatalf("%d spans ended, want one per attempt", len(spans))
	}
	for i, s := range spans {
		if s.Parent().SpanID() != sent.SpanID() || s.SpanContext().TraceID() != sent.TraceID() {
			t.Fatalf("span %d: parent %s in trace %s, want the enqueuer's %s in %s", i, s.Parent().SpanID(), s.SpanContext().TraceID(), sent.SpanID(), sent.TraceID())
		}
		if !got[i].Equal(s.SpanContext()) {
			t.Fatalf("attempt %d: the handler's ctx carries span %s, want the attempt's %s", i+1, got[i].SpanID(), s.SpanContext().SpanID())
		}
		if s.Name() != "jobs process" || s.SpanKind() != trace.SpanKindConsumer {
			t.Fatalf("span %q of kind %s", s.Name(), s.SpanKind())
		}
	}
	if spans[0].Status().Code != codes.Error || spans[1].Status().Code == codes.Error {
		t.Fatalf("span statuses %v, %v: want the failed attempt's an error and the second's not", spans[0].Status(), spans[1].Status())
	}
}

// TaskLogging logs a failed attempt with retries left at Warn, the failure
// that ends a task at Error, and a success at Debug.
func TestTaskLogging(t *testing.T) {
	e := newEnv(t)
	a, _ := e.newApp(1, nil)
	var mu sync.Mutex
	var buf bytes.Buffer
	logger := slog.New(slog.NewTextHandler(&lockedWriter{mu: &mu, w: &buf}, &slog.HandlerOptions{Level: slog.LevelDebug}))
	q, err := task.Handle(a, "jobs", func(ctx context.Context, tk *task.Task[job]) (done, error) {
		if tk.Payload.N == 2 {
			return done{}, errors.New("always fails")
		}
		return done{}, nil
	}, task.Use(middleware.TaskLogging(logger)), task.MaxRetries(1), task.Backoff(time.Millisecond, time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	startWorker(t, a)
	ok, err := q.Enqueue(context.Background(), job{N: 1})
	if err != nil {
		t.Fatal(err)
	}
	bad, err := q.Enqueue(context.Background(), job{N: 2})
	if err != nil {
		t.Fatal(err)
	}
	waitInfo(t, q, ok)
	if in := waitInfo(t, q, bad); in.State != task.Dead {
		t.Fatalf("failing task %s, want dead", in.State)
	}
	mu.Lock()
	out := buf.String()
	mu.Unlock()
	for _, want := range []string{
		`level=DEBUG msg="task succeeded" queue=jobs id=` + ok + ` attempt=1 max_retries=1`,
		`level=WARN msg="task attempt failed" queue=jobs id=` + bad + ` attempt=1 max_retries=1`,
		`level=ERROR msg="task failed" queue=jobs id=` + bad + ` attempt=2 max_retries=1`,
		`error="always fails"`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("log lacks %q:\n%s", want, out)
		}
	}
}

type lockedWriter struct {
	mu *sync.Mutex
	w  *bytes.Buffer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
