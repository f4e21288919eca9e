package middleware_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/leatdev/leat/app"
	"github.com/leatdev/leat/internal/tools/redistest"
	"github.com/leatdev/leat/middleware"
	"github.com/leatdev/leat/stream"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
)

// senderContext returns a context in a span of a known trace, as a sender
// instrumented with OpenTelemetry has.
func senderContext() (context.Context, trace.SpanContext) {
	sc := trace.NewSpanContext(trace.SpanContextConfig{
		TraceID:    trace.TraceID{0x4b, 0xf9, 0x2f, 0x35, 0x77, 0xb3, 0x4d, 0xa6, 0xa3, 0xce, 0x92, 0x9d, 0x0e, 0x0e, 0x47, 0x36},
		SpanID:     trace.SpanID{0x00, 0xf0, 0x67, 0xaa, 0x0b, 0xa9, 0x02, 0xb7},
		TraceFlags: trace.FlagsSampled,
	})
	return trace.ContextWithSpanContext(context.Background(), sc), sc
}

// A trace ID sent with a record reaches the processor's loop body, and a
// span per event is recorded when a tracer provider is set.
func TestTracingFromSendToProcessor(t *testing.T) {
	for _, recording := range []bool{false, true} {
		t.Run(map[bool]string{false: "no provider", true: "provider"}[recording], func(t *testing.T) {
			e := newEnv(t)
			a, s := e.newApp(2, nil)
			rec := tracetest.NewSpanRecorder()
			var opts middleware.TracingOptions
			if recording {
				tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
				t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
				opts.TracerProvider = tp
			}
			var (
				mu   sync.Mutex
				got  = map[int]trace.SpanContext{}
				fail = true
			)
			err := app.Process(a, s, "p", func(ctx context.Context, events *stream.Events[event]) error {
				for ev := range events.All() {
					mu.Lock()
					got[ev.Record.Seq] = trace.SpanContextFromContext(ev.Context())
					f := fail && ev.Record.Seq == 2
					fail = fail && !f
					mu.Unlock()
					if f {
						return errors.New("failed once")
					}
				}
				return nil
			}, app.Use(middleware.Tracing(opts)), app.Retries(1), app.Backoff(time.Millisecond, time.Millisecond))
			if err != nil {
				t.Fatal(err)
			}
			startWorker(t, a)
			ctx, sent := senderContext()
			if _, err := s.SendMessages(ctx, []stream.Message[event]{
				{Record: event{Key: "a", Seq: 1}, Headers: middleware.InjectTrace(ctx, nil)},
				{Record: event{Key: "b", Seq: 2}, Headers: middleware.InjectTrace(ctx, stream.Headers{"x": "y"})},
			}); err != nil {
				t.Fatal(err)
			}
			redistest.Eventually(t, 10*time.Second, "both events processed", func() bool {
				mu.Lock()
				defer mu.Unlock()
				return len(got) == 2 && !fail && pending(t, e, a) == 0
			})
			mu.Lock()
			defer mu.Unlock()
			for seq, sc := range got {
				if sc.TraceID() != sent.TraceID() {
					t.Fatalf("event %d: trace %s, sent %s", seq, sc.TraceID(), sent.TraceID())
				}
				if recording == (sc.SpanID() == sent.SpanID()) {
					t.Fatalf("event %d: span %s, sender's %s", seq, sc.SpanID(), sent.SpanID())
				}
			}
			spans := rec.Ended()
			if !recording {
				if len(spans) != 0 {
					t.Fatalf("%d spans without a provider", len(spans))
				}
				return
			}
			if len(spans) != 3 { // event 1, event 2 failed, event 2 again
				t.Fatalf("%d spans", len(spans))
			}
			errored := 0
			for _, sp := range spans {
				if sp.Parent().SpanID() != sent.SpanID() || sp.SpanKind() != trace.SpanKindConsumer || sp.Name() != "events process" {
					t.Fatalf("span %s: parent %s, kind %s", sp.Name(), sp.Parent().SpanID(), sp.SpanKind())
				}
				if sp.Status().Code == codes.Error {
					errored++
				}
			}
			if errored != 1 {
				t.Fatalf("%d failed spans", errored)
			}
		})
	}
}

func TestInjectTraceWithoutSpan(t *testing.T) {
	if h := middleware.InjectTrace(context.Background(), nil); h != nil {
		t.Fatalf("headers %v", h)
	}
	ctx, _ := senderContext()
	h := middleware.InjectTrace(ctx, nil)
	if h["traceparent"] != "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01" {
		t.Fatalf("headers %v", h)
	}
}
