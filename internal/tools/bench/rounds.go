package bench

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"time"

	"github.com/redis/go-redis/v9"
)

// A Workload is one way of doing a benchmark's work: one variant. Run does
// it once, on an empty key space, and returns one value per name of
// Figures, in that order.
type Workload struct {
	Name    string
	Figures []string
	Run     func(ctx context.Context) ([]float64, error)
}

// Timed returns a workload that measures the rate of work that handles n
// items (events, tasks) in the time run returns, as figure (such as
// FigureRate).
func Timed(name, figure string, n int, run func(ctx context.Context) (time.Duration, error)) Workload {
	return Workload{Name: name, Figures: []string{figure}, Run: func(ctx context.Context) ([]float64, error) {
		d, err := run(ctx)
		if err != nil {
			return nil, err
		}
		return []float64{float64(n) / max(d.Seconds(), 1e-9)}, nil
	}}
}

// Measure runs each workload once per round and returns their figures in
// the order of ws (medians are filled in by NewResult). Round r starts
// with workload r mod len(ws) and goes on in order, so each runs first,
// second, ... equally often over rounds that are a multiple of len(ws):
// drift of a shared machine favours none. Before each run the Go heap is
// collected, so that no run pays for the garbage of another; after it,
// clean empties the key space. Neither is timed.
func Measure(ctx context.Context, rounds int, clean func(context.Context) error, ws []Workload) ([]Variant, error) {
	out := make([]Variant, len(ws))
	for i, w := range ws {
		out[i] = Variant{Name: w.Name, Figures: make([]Figure, len(w.Figures))}
		for j, f := range w.Figures {
			out[i].Figures[j] = Figure{Name: f, Values: make([]float64, 0, rounds)}
		}
	}
	for r := range rounds {
		for k := range ws {
			i := (r + k) % len(ws)
			runtime.GC()
			vals, err := ws[i].Run(ctx)
			if err == nil && len(vals) != len(ws[i].Figures) {
				err = fmt.Errorf("%d figures, want %d", len(vals), len(ws[i].Figures))
			}
			if err != nil {
				return nil, fmt.Errorf("%s, round %d: %w", ws[i].Name, r+1, err)
			}
			if err := clean(ctx); err != nil {
				return nil, err
			}
			for j, v := range vals {
				out[i].Figures[j].Values = append(out[i].Figures[j].Values, v)
			}
		}
	}
	return out, nil
}

// measure is Measure with cfg's rounds on the space sp.
func measure(ctx context.Context, cfg Config, sp Space, ws []Workload) ([]Variant, error) {
	return Measure(ctx, cfg.Rounds, sp.Clean, ws)
}

// run runs benchmark name: cfg with its defaults, the workloads (and the
// pairs of variants to compare) that build makes on a fresh key space,
// measured over cfg.Rounds. Every key written is deleted before it returns.
func run(ctx context.Context, client redis.UniversalClient, cfg Config, name string,
	build func(cfg Config, sp Space) ([]Workload, []Pair, error)) (res Result, err error) {
	cfg, err = cfg.WithDefaults()
	if err != nil {
		return Result{}, err
	}
	sp, err := NewSpace(client)
	if err != nil {
		return Result{}, err
	}
	defer func() { err = errors.Join(err, sp.Drop(ctx)) }()
	ws, pairs, err := build(cfg, sp)
	if err != nil {
		return Result{}, err
	}
	vs, err := measure(ctx, cfg, sp, ws)
	if err != nil {
		return Result{}, err
	}
	return NewResult(name, cfg, vs, pairs...), nil
}
