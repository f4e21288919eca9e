package bench

import (
	"strings"
	"testing"
)

func TestMedian(t *testing.T) {
	for _, tc := range []struct {
		xs   []float64
		want float64
	}{
		{nil, 0},
		{[]float64{3}, 3},
		{[]float64{5, 1, 3}, 3},
		{[]float64{4, 1, 3, 2}, 2.5},
	} {
		if got := median(tc.xs); got != tc.want {
			t.Errorf("median(%v) = %v, want %v", tc.xs, got, tc.want)
		}
	}
}

func TestThousands(t *testing.T) {
	for v, want := range map[float64]string{
		0: "0", 7.4: "7", 999.6: "1,000", 12345: "12,345", 192300.4: "192,300", 1234567: "1,234,567",
	} {
		if got := thousands(v); got != want {
			t.Errorf("thousands(%v) = %q, want %q", v, got, want)
		}
	}
}

func TestWriteTable(t *testing.T) {
	cfg := Config{Rounds: 3}
	results := []Result{
		newResult(BenchmarkSend, cfg, []Variant{
			{Name: VariantLeat, Median: 192300},
			{Name: VariantRaw, Median: 198100},
		}),
		newResult(BenchmarkProcess, cfg, []Variant{
			{Name: VariantLeat, Median: 138000},
			{Name: VariantRaw, Median: 185000},
			{Name: VariantRawDecode, Median: 160000},
		}),
	}
	var b strings.Builder
	if err := WriteTable(&b, results); err != nil {
		t.Fatal(err)
	}
	want := `benchmark   variant      events/s (median of 3)   ratio
send        leat         192,300                  0.97
send        raw          198,100
process     leat         138,000                  0.75
process     raw          185,000
process     raw+decode   160,000                  0.86
`
	if b.String() != want {
		t.Errorf("table:\n%s\nwant:\n%s", b.String(), want)
	}
}
