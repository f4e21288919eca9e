package bench

import (
	"bytes"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
)

// Names of the benchmarks and their variants.
const (
	BenchmarkSend    = "send"
	BenchmarkProcess = "process"

	VariantLeat      = "leat"
	VariantRaw       = "raw"
	VariantRawDecode = "raw+decode"
)

// Names of the figures the benchmarks measure, each with its unit.
const (
	FigureRate     = "events/s"
	FigureTaskRate = "tasks/s"
)

// Result is what one benchmark measured.
type Result struct {
	// Benchmark is the benchmark's name, such as BenchmarkSend.
	Benchmark string `json:"benchmark"`
	// Config is the configuration it ran with, defaults filled in.
	Config Config `json:"config"`
	// Variants are leat's first, then the baselines.
	Variants []Variant `json:"variants"`
	// Ratios compare the medians of two variants, figure by figure.
	Ratios []Ratio `json:"ratios,omitempty"`
}

// Variant is what one variant of a benchmark measured.
type Variant struct {
	Name    string   `json:"name"`
	Figures []Figure `json:"figures"`
}

// Figure is one quantity a variant measured, once per round.
type Figure struct {
	// Name says what it is and in which unit: "events/s", "p99 ms".
	Name string `json:"name"`
	// Values are the figure of each round, in round order.
	Values []float64 `json:"values"`
	// Median is the median of Values.
	Median float64 `json:"median"`
}

// Ratio is the median of a figure of one variant divided by the median of
// the same figure of another: for a rate, below 1 means Of is slower; for
// a latency or a size, above 1 means Of costs more.
type Ratio struct {
	Of     string  `json:"of"`
	To     string  `json:"to"`
	Figure string  `json:"figure"`
	Value  float64 `json:"value"`
}

// Name is how the table shows r: "leat/raw".
func (r Ratio) Name() string { return r.Of + "/" + r.To }

// Pair names two variants whose figures a Result compares: Of divided by
// To.
type Pair struct{ Of, To string }

// NewResult returns the result of benchmark name from its variants, with
// medians filled in and a ratio for every figure the two variants of each
// pair have in common.
func NewResult(name string, cfg Config, vs []Variant, pairs ...Pair) Result {
	for i := range vs {
		for j := range vs[i].Figures {
			vs[i].Figures[j].Median = median(vs[i].Figures[j].Values)
		}
	}
	r := Result{Benchmark: name, Config: cfg, Variants: vs}
	for _, p := range pairs {
		of, to := r.Variant(p.Of), r.Variant(p.To)
		if of == nil || to == nil {
			continue
		}
		for _, f := range of.Figures {
			if g := to.Figure(f.Name); g != nil && g.Median != 0 {
				r.Ratios = append(r.Ratios, Ratio{Of: p.Of, To: p.To, Figure: f.Name, Value: f.Median / g.Median})
			}
		}
	}
	return r
}

// Variant returns the variant called name, or nil.
func (r Result) Variant(name string) *Variant {
	for i := range r.Variants {
		if r.Variants[i].Name == name {
			return &r.Variants[i]
		}
	}
	return nil
}

// Ratio returns the ratio of figure between variants of and to, and
// whether r has it.
func (r Result) Ratio(of, to, figure string) (float64, bool) {
	for _, x := range r.Ratios {
		if x.Of == of && x.To == to && x.Figure == figure {
			return x.Value, true
		}
	}
	return 0, false
}

// Figure returns the figure called name, or nil.
func (v *Variant) Figure(name string) *Figure {
	for i := range v.Figures {
		if v.Figures[i].Name == name {
			return &v.Figures[i]
		}
	}
	return nil
}

// median returns the median of xs (the mean of the middle two for an even
// count); 0 for none.
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Sorted(slices.Values(xs))
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// percentile returns the q-quantile (0 < q <= 1) of sorted by the nearest
// rank: the smallest value with at least q of the values at or below it;
// 0 for none.
func percentile(sorted []float64, q float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	// A small tolerance keeps q*n that is an integer in exact arithmetic
	// from rounding up past it (0.999*1000 is 999.0000000000001).
	rank := int(math.Ceil(q*float64(len(sorted)) - 1e-9))
	return sorted[min(max(rank, 1), len(sorted))-1]
}

// WriteTable writes results as one table: a line per figure of each
// variant with its median over the rounds, then a line per ratio.
//
//	benchmark   variant    figure     median of 5
//	send        leat       events/s   192,300
//	send        raw        events/s   198,100
//	send        leat/raw   events/s   0.97
func WriteTable(w io.Writer, results []Result) error {
	rounds := 0
	if len(results) > 0 {
		rounds = results[0].Config.Rounds
	}
	var buf bytes.Buffer
	tw := tabwriter.NewWriter(&buf, 0, 0, 3, ' ', 0)
	fmt.Fprintf(tw, "benchmark\tvariant\tfigure\tmedian of %d\n", rounds)
	for _, r := range results {
		for _, v := range r.Variants {
			for _, f := range v.Figures {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", r.Benchmark, v.Name, f.Name, FormatFigure(f.Median))
			}
		}
		for _, x := range r.Ratios {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", r.Benchmark, x.Name(), x.Figure, strconv.FormatFloat(x.Value, 'f', 2, 64))
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for line := range strings.Lines(buf.String()) {
		if _, err := io.WriteString(w, strings.TrimRight(line, " \n")+"\n"); err != nil {
			return err
		}
	}
	return nil
}

// FormatFigure formats a figure for the table: whole numbers and figures
// from 100 up rounded to an integer with comma separators (192,300; 8);
// others with two decimals (0.41).
func FormatFigure(v float64) string {
	if math.Abs(v) >= 100 || v == math.Trunc(v) {
		return thousands(v)
	}
	return strconv.FormatFloat(v, 'f', 2, 64)
}

// thousands formats v rounded to an integer with comma separators:
// 192300.4 → "192,300".
func thousands(v float64) string {
	s := strconv.FormatFloat(math.Abs(v), 'f', 0, 64)
	first := len(s) % 3
	if first == 0 {
		first = 3
	}
	out := []byte(s[:first])
	for i := first; i < len(s); i += 3 {
		out = append(out, ',')
		out = append(out, s[i:i+3]...)
	}
	if v < 0 && s != "0" {
		return "-" + string(out)
	}
	return string(out)
}
