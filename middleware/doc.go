// Package middleware wraps the handling of events by processors (logging,
// timeouts, retries, deduplication, rate limits, circuit breaking and
// tracing) and the runs of tasks by task queues (logging and tracing),
// written once for every processor, queue and record type.
//
// # Shape
//
// A [Handler] handles one [Message]: one event, or one batch when the
// processor ranges over Batches. A [Middleware] wraps a Handler. The Message
// is untyped (raw data, headers, entry IDs, delivery counts, the fencing
// token, and the decoded record as any), so one middleware serves every
// stream.
//
// # Order and acknowledgement
//
// Middleware is listed on the App (app.Config.Middleware, for every
// processor) and per processor (app.Use). The app's wrap the processor's;
// within each list the first is outermost; the processor's loop body is the
// innermost handler:
//
//	Config.Middleware[0] → … → Use(…)[0] → … → loop body
//
// An event (or a batch) is acknowledged when the chain returns nil. The
// loop body's error (what the processor returns after leaving the loop) is
// what next returns; the chain's error goes to the processor's retries in
// place and its failure policy, exactly as a loop-body error does without
// middleware. A middleware that does not call next skips the message: it
// is acknowledged without reaching the loop body.
//
// Inside the loop, Event.Context returns the context the chain handed to the
// loop body: use it to honour a [Timeout] and to continue a [Tracing] span.
//
// # Writing one
//
//	func Audit(next middleware.Handler) middleware.Handler {
//		return func(ctx context.Context, m *middleware.Message) error {
//			err := next(ctx, m)
//			slog.Info("handled", "stream", m.Stream, "ids", m.IDs(), "error", err)
//			return err
//		}
//	}
//
// # Built-ins
//
//   - [Logging]: one slog record per failed event (and per event at Debug).
//   - [Timeout]: a deadline on the handler's context.
//   - [Retry]: which errors retry, exponential backoff with jitter, a
//     maximum that replaces the processor's retry limit; honours SkipRetry
//     and RetryAfter.
//   - [Dedup]: skips events whose idempotency key was processed within a
//     TTL, recorded in Redis with a fenced write.
//   - [RateLimit]: N events per second per processor or per partition key,
//     shared by every worker (GCRA in Redis); limited events wait.
//   - [CircuitBreaker]: after N consecutive failures, the partition waits a
//     cool-down, then tries one event.
//   - [Tracing] and [InjectTrace]: W3C trace context from Send to a span
//     per event (OpenTelemetry).
//
// Middleware that keeps state in Redis uses the Message's Client, App and
// KeyPrefix, which the App fills in.
//
// # Task middleware
//
// A [TaskMiddleware] wraps a [TaskHandler], which runs one attempt of a
// task ([TaskRun]: queue, ID, key, attempt, deadline, headers, the payload
// as JSON, the result). app.Config.TaskMiddleware applies to every queue
// the app's workers run, task.Use to one queue; the app's wrap the
// queue's, the first of each list outermost, and decoding the payload and
// calling the handler is innermost:
//
//	Config.TaskMiddleware[0] → … → task.Use(…)[0] → … → decode, handler
//
// The handler decodes the Payload the chain hands it; after next, Result
// holds its result, and whatever Result holds when the chain returns nil
// is stored. The chain's error fails the attempt as a handler's error does
// (retried with backoff, SkipRetry, RetryAfter). Built in: [TaskLogging]
// and [TaskTracing], which continues the trace of the enqueuer (its
// context written into the task's headers with InjectTrace:
// task.Headers(middleware.InjectTrace(ctx, nil))).
//
// # Metrics
//
// Throughput, latency, failures and lag come from the runtime's hooks
// (package executor, and task.HookTaskRun for tasks), with or without
// middleware.
package middleware
