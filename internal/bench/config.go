package bench

import (
	"errors"
	"fmt"
	"log/slog"
)

// Defaults of Config.
const (
	DefaultEvents       = 200_000
	DefaultRounds       = 5
	DefaultPartitions   = 16
	DefaultPayloadBytes = 64
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
	// Logger receives the logs of the apps the benchmark runs.
	// Default slog.Default().
	Logger *slog.Logger `json:"-"`
}

// withDefaults checks c and returns it with defaults filled in.
func (c Config) withDefaults() (Config, error) {
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
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if err := errors.Join(errs...); err != nil {
		return c, fmt.Errorf("bench config: %w", err)
	}
	return c, nil
}
