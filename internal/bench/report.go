package bench

import (
	"bytes"
	"fmt"
	"io"
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

// Result is what one benchmark measured.
type Result struct {
	// Benchmark is BenchmarkSend or BenchmarkProcess.
	Benchmark string `json:"benchmark"`
	// Config is the configuration it ran with, defaults filled in.
	Config Config `json:"config"`
	// Variants are leat first, then the raw baselines.
	Variants []Variant `json:"variants"`
	// Ratio is the median rate of leat divided by that of raw.
	Ratio float64 `json:"ratio"`
	// RatioDecode is the median rate of leat divided by that of raw+decode
	// (Process only; 0 for Send).
	RatioDecode float64 `json:"ratio_decode,omitempty"`
}

// Variant is what one variant of a benchmark measured.
type Variant struct {
	Name string `json:"name"`
	// Rates are the events/s of each round, in round order.
	Rates []float64 `json:"rates"`
	// Median is the median of Rates.
	Median float64 `json:"median"`
}

// newResult returns the result of benchmark name from its variants.
func newResult(name string, cfg Config, vs []Variant) Result {
	r := Result{Benchmark: name, Config: cfg, Variants: vs}
	leat := r.median(VariantLeat)
	if raw := r.median(VariantRaw); raw > 0 {
		r.Ratio = leat / raw
	}
	if dec := r.median(VariantRawDecode); dec > 0 {
		r.RatioDecode = leat / dec
	}
	return r
}

// median returns the median rate of the variant called name; 0 when r has
// none.
func (r Result) median(name string) float64 {
	for _, v := range r.Variants {
		if v.Name == name {
			return v.Median
		}
	}
	return 0
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

// WriteTable writes results as a table, one line per variant: leat's line
// carries the ratio to raw, raw+decode's the ratio of leat to it.
//
//	benchmark  variant      events/s (median of 5)   ratio
//	send       leat         192,300                  0.97
//	send       raw          198,100
func WriteTable(w io.Writer, results []Result) error {
	rounds := 0
	if len(results) > 0 {
		rounds = results[0].Config.Rounds
	}
	var buf bytes.Buffer
	tw := tabwriter.NewWriter(&buf, 0, 0, 3, ' ', 0)
	fmt.Fprintf(tw, "benchmark\tvariant\tevents/s (median of %d)\tratio\n", rounds)
	for _, r := range results {
		for _, v := range r.Variants {
			ratio := ""
			switch v.Name {
			case VariantLeat:
				ratio = strconv.FormatFloat(r.Ratio, 'f', 2, 64)
			case VariantRawDecode:
				ratio = strconv.FormatFloat(r.RatioDecode, 'f', 2, 64)
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", r.Benchmark, v.Name, thousands(v.Median), ratio)
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	// Lines without a ratio end in the padding of the rate column.
	for line := range strings.Lines(buf.String()) {
		if _, err := io.WriteString(w, strings.TrimRight(line, " \n")+"\n"); err != nil {
			return err
		}
	}
	return nil
}

// thousands formats v rounded to an integer with comma separators:
// 192300.4 → "192,300".
func thousands(v float64) string {
	s := strconv.FormatFloat(v, 'f', 0, 64)
	first := len(s) % 3
	if first == 0 {
		first = 3
	}
	out := []byte(s[:first])
	for i := first; i < len(s); i += 3 {
		out = append(out, ',')
		out = append(out, s[i:i+3]...)
	}
	return string(out)
}
