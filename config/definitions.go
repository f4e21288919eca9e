package config

import (
	"fmt"
	"strings"
	"time"

	"github.com/leatdev/leat/stream"
	"github.com/leatdev/leat/task"
)

// Definition returns what the registry records about the stream.
func (s *Stream) Definition() stream.Definition {
	return stream.Definition{
		Name: s.Name, Partitions: s.Partitions, KeyField: s.KeyField, Size: s.Retention, Codec: s.Codec, WhenFull: s.WhenFull,
	}
}

// Definition returns what the registry records about the queue: the
// settings tools need to enqueue and run its tasks (not Grace, Webhook*,
// Cron nor Handler, which are the workers').
func (q *Queue) Definition() task.Definition {
	d, err := task.NewDefinition(q.Name, q.Options()...)
	if err != nil {
		// Parse checked every setting with task.NewDefinition.
		panic(fmt.Sprintf("config: queue %q: %v", q.Name, err))
	}
	return d
}

// A field of a definition as the file writes it, for the changes of a
// plan.
type field struct {
	path  string // under the stream or queue: "retries", "backoff.min"
	value string
}

func streamFields(d stream.Definition) []field {
	wf := string(d.WhenFull)
	if wf == "" {
		wf = "trim"
	}
	return []field{
		{"partitions", fmt.Sprint(d.Partitions)}, {"key", d.KeyField}, {"retention", fmt.Sprint(d.Size)},
		{"codec", d.Codec}, {"when_full", wf},
	}
}

func queueFields(d task.Definition) []field {
	return []field{
		{"concurrency", fmt.Sprint(d.Concurrency)}, {"timeout", formatDuration(d.Timeout)},
		{"retries", fmt.Sprint(d.MaxRetries)}, {"backoff.min", formatDuration(d.BackoffMin)},
		{"backoff.max", formatDuration(d.BackoffMax)}, {"visibility", formatDuration(d.Visibility)},
		{"retention", formatDuration(d.Retention)}, {"dead.max", fmt.Sprint(d.DeadMax)},
		{"dead.age", formatDuration(d.DeadAge)}, {"rate", formatRate(d.Rate, d.RateWindow)},
		{"key_rate", formatRate(d.KeyRate, d.KeyWindow)}, {"keyed", fmt.Sprint(d.Keyed)},
		{"levels", formatLevels(d.Levels, d.Strict)}, {"unique", formatDuration(d.UniqueTTL)},
		{"key_concurrency", fmt.Sprint(max(d.KeyConcurrency, 1))}, {"max_key_backlog", formatCount(d.MaxKeyBacklog)},
	}
}

// formatCount writes a bound n; "none" for 0.
func formatCount(n int) string {
	if n == 0 {
		return "none"
	}
	return fmt.Sprint(n)
}

// formatDuration writes d as a file does ("30s", "1h30m", "24h"); "none"
// for 0.
func formatDuration(d time.Duration) string {
	if d == 0 {
		return "none"
	}
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

func formatRate(n int, per time.Duration) string {
	if n == 0 {
		return "none"
	}
	return fmt.Sprintf("%d per %s", n, formatDuration(per))
}

func formatLevels(levels []task.Level, strict bool) string {
	parts := make([]string, len(levels))
	for i, l := range levels {
		parts[i] = l.Name
		if !strict {
			parts[i] = fmt.Sprintf("%s:%d", l.Name, l.Weight)
		}
	}
	return "[" + strings.Join(parts, ", ") + "]"
}
