package middleware

import (
	"context"
	"log/slog"
	"time"
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
