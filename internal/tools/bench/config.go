package bench

import (
	"errors"
	"fmt"
	"log/slog"
	"time"
)

// Defaults of Config.
const (
	DefaultEvents       = 200_000
	DefaultRounds       = 5
	DefaultPartitions   = 16
	DefaultPayloadBytes = 64
	DefaultRate         = 5000
	DefaultLatency      = 2 * time.Second
	DefaultIdle         = 10 * time.Second
	DefaultWide         = 256
)

// Config configures a benchmark. The zero value of each field means its
// default.
type Config struct {
	// Events is how many events each variant sends or processes per
	// round. Default 200,000.
	Events int `json:"events"`
	// Rounds is how many times each variant runs. Default 5.
	Rounds int `json:"rounds"`
	// Partitions is the partition count of the benchmark streams.
	// Default 16.
	Partitions int `json:"partitions"`
	// PayloadBytes is the length of each record's note, a filler string.
	// Default 64.
	PayloadBytes int `json:"payload_bytes"`
	// Rate is the events/s the latency benchmark sends. Default 5,000.
	Rate int `json:"rate"`
	// Latency is how long each round of the latency benchmark sends.
	// Default 2s.
	Latency time.Duration `json:"latency"`
	// Idle is how long the idle benchmark watches an idle worker.
	// Default 10s.
	Idle time.Duration `json:"idle"`
	// Wide is the partition count of the memory and idle benchmarks, and of
	// the latency benchmark's wide variants.
	// Default 256.
	Wide int `json:"wide"`
	// Logger receives the logs of the apps the benchmark runs.
	// Default slog.Default().
	Logger *slog.Logger `json:"-"`
}

// WithDefaults checks c and returns it with defaults filled in, or an
// error naming every setting out of range.
func (c Config) WithDefaults() (Config, error) {
	var errs []error
	fill := func(v *int, name string, def, limit int) {
		switch {
		case *v == 0:
			*v = def
		case *v < 0 || *v > limit:
			errs = append(errs, fmt.Errorf("%s %d out of range 1..%d", name, *v, limit))
		}
	}
	fill(&c.Events, "events", DefaultEvents, 1<<31-1)
	fill(&c.Rounds, "rounds", DefaultRounds, 1000)
	fill(&c.Partitions, "partitions", DefaultPartitions, 65536)
	fill(&c.PayloadBytes, "payload bytes", DefaultPayloadBytes, 1<<20)
	fill(&c.Rate, "rate", DefaultRate, 1_000_000)
	fill(&c.Wide, "wide partitions", DefaultWide, 65536)
	fillD := func(v *time.Duration, name string, def time.Duration) {
		switch {
		case *v == 0:
			*v = def
		case *v < time.Millisecond || *v > time.Hour:
			errs = append(errs, fmt.Errorf("%s %s out of range 1ms..1h", name, *v))
		}
	}
	fillD(&c.Latency, "latency duration", DefaultLatency)
	fillD(&c.Idle, "idle duration", DefaultIdle)
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if err := errors.Join(errs...); err != nil {
		return c, fmt.Errorf("bench config: %w", err)
	}
	return c, nil
}
