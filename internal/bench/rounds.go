package bench

import (
	"context"
	"fmt"
	"runtime"
	"time"
)

// A variant is one way of doing a benchmark's work. run does it once, on an
// empty space, and returns how long the timed part took.
type variant struct {
	name string
	run  func(ctx context.Context) (time.Duration, error)
}

// measure runs each variant once per round and returns their rates in the
// order of vs. Round r starts with variant r mod len(vs) and goes on in
// order, so each variant runs first, second, ... equally often over rounds
// that are a multiple of len(vs). Before each run the Go heap is collected,
// so that no run pays for the garbage of another; after it the space is
// emptied. Neither is timed.
func measure(ctx context.Context, cfg Config, sp space, vs []variant) ([]Variant, error) {
	out := make([]Variant, len(vs))
	for i, v := range vs {
		out[i] = Variant{Name: v.name, Rates: make([]float64, 0, cfg.Rounds)}
	}
	for r := range cfg.Rounds {
		for k := range vs {
			i := (r + k) % len(vs)
			runtime.GC()
			d, err := vs[i].run(ctx)
			if err != nil {
				return nil, fmt.Errorf("%s, round %d: %w", vs[i].name, r+1, err)
			}
			if err := sp.clean(ctx); err != nil {
				return nil, err
			}
			out[i].Rates = append(out[i].Rates, float64(cfg.Events)/max(d.Seconds(), 1e-9))
		}
	}
	for i := range out {
		out[i].Median = median(out[i].Rates)
	}
	return out, nil
}
