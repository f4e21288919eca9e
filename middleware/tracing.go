package middleware

import (
	"context"
	"errors"

	"github.com/leatdev/leat/internal/core"
	"github.com/leatdev/leat/stream"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// TracingOptions configure Tracing.
type TracingOptions struct {
	// TracerProvider makes the spans. Default: otel.GetTracerProvider(),
	// which records nothing until the program sets one.
	TracerProvider trace.TracerProvider
	// Propagator reads the trace context from entry headers. Default:
	// W3C trace context (traceparent, tracestate).
	Propagator propagation.TextMapPropagator
}

// tracerName names the instrumentation.
const tracerName = "github.com/leatdev/leat/middleware"

// Tracing returns a middleware continuing the trace an entry was sent in
// (traceparent and tracestate headers, written with InjectTrace): the
// loop body's context (Event.Context) carries a consumer span, a child of
// the sender's, named "STREAM process", with the stream, processor,
// partition and entry ID; a failure is recorded on it. A batch's span is
// linked to the trace of each of its entries, and its parent is the
// first's. With no tracer provider set, no span is recorded, but the
// sender's trace context still reaches the loop body.
func Tracing(o TracingOptions) Middleware {
	if o.Propagator == nil {
		o.Propagator = propagation.TraceContext{}
	}
	return func(next Handler) Handler {
		return func(ctx context.Context, m *Message) error {
			tp := o.TracerProvider
			if tp == nil {
				tp = otel.GetTracerProvider()
			}
			parent := o.Propagator.Extract(ctx, propagation.MapCarrier(m.First().Headers))
			opts := []trace.SpanStartOption{
				trace.WithSpanKind(trace.SpanKindConsumer),
				trace.WithAttributes(
					attribute.String("messaging.system", "leat"),
					attribute.String("messaging.destination.name", m.Stream),
					attribute.String("messaging.consumer.group.name", m.Processor),
					attribute.Int("messaging.destination.partition.id", m.Partition),
					attribute.String("messaging.message.id", m.First().ID),
				),
			}
			if m.Batch {
				opts = append(opts, trace.WithAttributes(attribute.Int("messaging.batch.message_count", len(m.Entries))))
				for i := range m.Entries {
					sc := trace.SpanContextFromContext(o.Propagator.Extract(ctx, propagation.MapCarrier(m.Entries[i].Headers)))
					if sc.IsValid() {
						opts = append(opts, trace.WithLinks(trace.Link{SpanContext: sc}))
					}
				}
			}
			ctx, span := tp.Tracer(tracerName).Start(parent, m.Stream+" process", opts...)
			defer span.End()
			err := next(ctx, m)
			if err != nil && !errors.Is(err, core.ErrLoopLeft) {
				span.RecordError(err)
				span.SetStatus(codes.Error, err.Error())
			}
			return err
		}
	}
}

// InjectTrace writes the trace context of ctx's span into headers
// (traceparent, tracestate, W3C trace context) and returns them, allocated
// when nil, for a stream.Message to send:
//
//	s.SendMessages(ctx, []stream.Message[Order]{{Record: o, Headers: middleware.InjectTrace(ctx, nil)}})
//
// Without a span in ctx, headers are returned as they are.
func InjectTrace(ctx context.Context, headers stream.Headers) stream.Headers {
	if !trace.SpanContextFromContext(ctx).IsValid() {
		return headers
	}
	if headers == nil {
		headers = stream.Headers{}
	}
	propagation.TraceContext{}.Inject(ctx, propagation.MapCarrier(headers))
	return headers
}

// TaskTracing returns a task middleware continuing the trace a task was
// enqueued in (traceparent and tracestate headers, given at enqueue with
// task.Headers(InjectTrace(ctx, nil))): each attempt runs in a consumer
// span, a child of the enqueuer's, named "QUEUE process", with the queue,
// task ID, attempt and key; a failed attempt is recorded on it. With no
// tracer provider set, no span is recorded, but the enqueuer's trace
// context still reaches the handler's ctx.
func TaskTracing(o TracingOptions) TaskMiddleware {
	if o.Propagator == nil {
		o.Propagator = propagation.TraceContext{}
	}
	return func(next TaskHandler) TaskHandler {
		return func(ctx context.Context, r *TaskRun) error {
			tp := o.TracerProvider
			if tp == nil {
				tp = otel.GetTracerProvider()
			}
			parent := o.Propagator.Extract(ctx, propagation.MapCarrier(r.Headers))
			attrs := []attribute.KeyValue{
				attribute.String("messaging.system", "leat"),
				attribute.String("messaging.destination.name", r.Queue),
				attribute.String("messaging.message.id", r.ID),
				attribute.Int("leat.task.attempt", r.Attempt),
			}
			if r.Key != "" {
				attrs = append(attrs, attribute.String("leat.task.key", r.Key))
			}
			ctx, span := tp.Tracer(tracerName).Start(parent, r.Queue+" process",
				trace.WithSpanKind(trace.SpanKindConsumer), trace.WithAttributes(attrs...))
			defer span.End()
			err := next(ctx, r)
			if err != nil {
				span.RecordError(err)
				span.SetStatus(codes.Error, err.Error())
			}
			return err
		}
	}
}
