package config

import (
	"strings"

	"github.com/leatdev/leat/stream"
	"github.com/leatdev/leat/task"
)

// Options returns the task options that declare the queue as the file
// says (task.Handle, task.Declare): every setting, defaults included. Its
// cron schedules and handler are not options: see Handle.
func (q *Queue) Options() []task.Option {
	opts := []task.Option{
		task.Concurrency(q.Concurrency), task.Timeout(q.Timeout), task.MaxRetries(q.Retries),
		task.Backoff(q.BackoffMin, q.BackoffMax), task.Visibility(q.Visibility), task.Retention(q.Retention),
		task.KeepDead(q.DeadMax, q.DeadAge), task.Grace(q.Grace),
		task.WebhookRetry(q.WebhookAttempts, q.WebhookBackoff),
	}
	if q.Weighted {
		opts = append(opts, task.Weighted(q.Levels...))
	} else {
		opts = append(opts, task.Priorities(levelNames(q.Levels)...))
	}
	if q.Keyed {
		opts = append(opts, task.Keyed())
	}
	if q.Rate.Limit > 0 {
		opts = append(opts, task.Rate(q.Rate.Limit, q.Rate.Per))
	}
	if q.KeyRate.Limit > 0 {
		opts = append(opts, task.KeyRate(q.KeyRate.Limit, q.KeyRate.Per))
	}
	if q.UniqueTTL > 0 {
		opts = append(opts, task.UniqueFor(q.UniqueTTL))
	}
	if q.KeyConcurrency > 1 {
		opts = append(opts, task.KeyConcurrency(q.KeyConcurrency))
	}
	if q.MaxKeyBacklog > 0 {
		opts = append(opts, task.MaxKeyBacklog(q.MaxKeyBacklog))
	}
	if q.Events > 0 {
		opts = append(opts, task.Events(q.Events))
	}
	return opts
}

// Options returns the stream options that declare the stream as the file
// says (stream.Declare): partitions, key field, retention, codec and
// full-partition policy.
func (s *Stream) Options() []stream.Option {
	return []stream.Option{
		stream.Partitions(s.Partitions), stream.KeyField(s.KeyField), stream.Size(s.Retention),
		stream.WithCodec(codecOf(s.Codec)), stream.WhenFull(s.WhenFull),
	}
}

// codecOf returns the codec a checked codec name names.
func codecOf(name string) stream.Codec {
	base, comp, _ := strings.Cut(name, "+")
	c := stream.MsgPack
	if base == "json" {
		c = stream.JSON
	}
	switch comp {
	case "gzip":
		return stream.Compressed(c, stream.Gzip)
	case "zstd":
		return stream.Compressed(c, stream.Zstd)
	}
	return c
}
