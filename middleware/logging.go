package middleware

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/leatdev/leat/internal/core"
)

// Logging returns a middleware writing one record to logger per event whose
// handling failed (level Error), and one per event handled at level Debug
// when logger enables it. Each record has the attributes stream, processor,
// partition, id, deliveries, duration and, on failure, error; the events of
// a failed batch are each logged, with batch set to the batch's size. A nil
// logger means slog.Default().
func Logging(logger *slog.Logger) Middleware {
	return func(next Handler) Handler {
		return func(ctx context.Context, m *Message) error {
			log := logger
			if log == nil {
				log = slog.Default()
			}
			start := time.Now()
			err := next(ctx, m)
			level, msg := slog.LevelDebug, "event handled"
			if err != nil {
				level, msg = slog.LevelError, "event failed"
			}
			if !log.Enabled(ctx, level) {
				return err
			}
			d := time.Since(start)
			for i := range m.Entries {
				e := &m.Entries[i]
				attrs := []slog.Attr{
					slog.String("stream", m.Stream), slog.String("processor", m.Processor),
					slog.Int("partition", m.Partition), slog.String("id", e.ID),
					slog.Int64("deliveries", e.Deliveries), slog.Duration("duration", d),
				}
				if m.Batch {
					attrs = append(attrs, slog.Int("batch", len(m.Entries)))
				}
				if err != nil {
					attrs = append(attrs, slog.Any("error", err))
				}
				log.LogAttrs(ctx, level, msg, attrs...)
			}
			return err
		}
	}
}

// TaskLogging returns a task middleware writing one record to logger per
// failed attempt: level Warn while retries remain ("task attempt failed"),
// Error when the failure ends the task ("task failed": its last attempt, or
// an error wrapped with SkipRetry); and one per succeeded attempt at level
// Debug when logger enables it. Each record has the attributes queue, id,
// attempt, max_retries, duration, key (keyed queues) and, on failure,
// error, and cause when the attempt's context ended (timeout,
// cancellation, the worker stopping). A nil logger means slog.Default().
func TaskLogging(logger *slog.Logger) TaskMiddleware {
	return func(next TaskHandler) TaskHandler {
		return func(ctx context.Context, r *TaskRun) error {
			log := logger
			if log == nil {
				log = slog.Default()
			}
			start := time.Now()
			err := next(ctx, r)
			level, msg := slog.LevelDebug, "task succeeded"
			if err != nil {
				level, msg = slog.LevelWarn, "task attempt failed"
				if r.LastAttempt() || errors.Is(err, core.ErrSkipRetry) {
					level, msg = slog.LevelError, "task failed"
				}
			}
			if !log.Enabled(ctx, level) {
				return err
			}
			attrs := []slog.Attr{
				slog.String("queue", r.Queue), slog.String("id", r.ID), slog.Int("attempt", r.Attempt),
				slog.Int("max_retries", r.MaxRetries), slog.Duration("duration", time.Since(start)),
			}
			if r.Key != "" {
				attrs = append(attrs, slog.String("key", r.Key))
			}
			if err != nil {
				attrs = append(attrs, slog.Any("error", err))
				if cause := context.Cause(ctx); cause != nil {
					attrs = append(attrs, slog.Any("cause", cause))
				}
			}
			log.LogAttrs(ctx, level, msg, attrs...)
			return err
		}
	}
}
