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

func TestPercentile(t *testing.T) {
	hundred := make([]float64, 100)
	for i := range hundred {
		hundred[i] = float64(i + 1)
	}
	thousand := make([]float64, 1000)
	for i := range thousand {
		thousand[i] = float64(i + 1)
	}
	for _, tc := range []struct {
		xs   []float64
		q    float64
		want float64
	}{
		{nil, 0.5, 0},
		{[]float64{7}, 0.5, 7},
		{[]float64{7}, 0.999, 7},
		{[]float64{1, 2}, 0.5, 1},
		{[]float64{1, 2, 3, 4}, 0.5, 2},
		{[]float64{1, 2, 3, 4}, 0.51, 3},
		{hundred, 0.5, 50},
		{hundred, 0.99, 99},
		{hundred, 0.999, 100},
		{thousand, 0.99, 990},
		{thousand, 0.999, 999},
		{thousand, 1, 1000},
	} {
		if got := percentile(tc.xs, tc.q); got != tc.want {
			t.Errorf("percentile(%d values, %v) = %v, want %v", len(tc.xs), tc.q, got, tc.want)
		}
	}
}

func TestNewResult(t *testing.T) {
	r := NewResult("x", Config{Rounds: 3}, []Variant{
		{Name: VariantLeat, Figures: []Figure{{Name: FigureRate, Values: []float64{90, 100, 80}}, {Name: FigureP99, Values: []float64{2, 1, 3}}}},
		{Name: VariantRaw, Figures: []Figure{{Name: FigureRate, Values: []float64{200, 210, 190}}, {Name: FigureP99, Values: []float64{1, 1, 1}}}},
		{Name: "other", Figures: []Figure{{Name: FigureRate, Values: []float64{0, 0, 0}}}},
	}, Pair{VariantLeat, VariantRaw}, Pair{VariantLeat, "other"}, Pair{VariantLeat, "missing"})
	if m := r.Variant(VariantLeat).Figure(FigureRate).Median; m != 90 {
		t.Errorf("leat median %v, want 90", m)
	}
	if v, ok := r.Ratio(VariantLeat, VariantRaw, FigureRate); !ok || v != 90.0/200 {
		t.Errorf("leat/raw events/s %v %v, want 0.45", v, ok)
	}
	if v, ok := r.Ratio(VariantLeat, VariantRaw, FigureP99); !ok || v != 2 {
		t.Errorf("leat/raw p99 %v %v, want 2", v, ok)
	}
	if len(r.Ratios) != 2 {
		t.Errorf("ratios %+v: want none to a zero median nor a missing variant", r.Ratios)
	}
}

func TestFormatFigure(t *testing.T) {
	for v, want := range map[float64]string{0: "0", 8: "8", 0.414: "0.41", 0.2: "0.20", 99.994: "99.99", 100: "100", 192300.4: "192,300", -1234: "-1,234"} {
		if got := FormatFigure(v); got != want {
			t.Errorf("FormatFigure(%v) = %q, want %q", v, got, want)
		}
	}
}

func TestParseCommandCalls(t *testing.T) {
	info := "# Commandstats\r\n" +
		"cmdstat_xreadgroup:calls=12,usec=100,usec_per_call=8.33,rejected_calls=0,failed_calls=0\r\n" +
		"cmdstat_evalsha:calls=5,usec=50,usec_per_call=10.00,rejected_calls=0,failed_calls=0\r\n" +
		"cmdstat_info:calls=7,usec=1,usec_per_call=0.1,rejected_calls=0,failed_calls=0\r\n" +
		"cmdstat_client|list:calls=3,usec=1,usec_per_call=0.3,rejected_calls=0,failed_calls=0\r\n"
	n, err := parseCommandCalls(info)
	if err != nil || n != 17 {
		t.Errorf("parseCommandCalls = %d, %v; want 17", n, err)
	}
	if _, err := parseCommandCalls("cmdstat_get:calls=x,usec=1\r\n"); err == nil {
		t.Error("a bad count parsed")
	}
}

func TestWriteTable(t *testing.T) {
	cfg := Config{Rounds: 3}
	results := []Result{
		NewResult(BenchmarkSend, cfg, []Variant{
			{Name: VariantLeat, Figures: []Figure{{Name: FigureRate, Values: []float64{192300}}}},
			{Name: VariantRaw, Figures: []Figure{{Name: FigureRate, Values: []float64{198100}}}},
		}, Pair{VariantLeat, VariantRaw}),
		NewResult(BenchmarkLatency, cfg, []Variant{
			{Name: VariantLeat, Figures: []Figure{{Name: FigureP50, Values: []float64{0.41}}}},
			{Name: VariantRaw, Figures: []Figure{{Name: FigureP50, Values: []float64{0.2}}}},
		}, Pair{VariantLeat, VariantRaw}),
	}
	var b strings.Builder
	if err := WriteTable(&b, results); err != nil {
		t.Fatal(err)
	}
	want := `benchmark   variant    figure     median of 3
send        leat       events/s   192,300
send        raw        events/s   198,100
send        leat/raw   events/s   0.97
latency     leat       p50 ms     0.41
latency     raw        p50 ms     0.20
latency     leat/raw   p50 ms     2.05
`
	if b.String() != want {
		t.Errorf("table:\n%s\nwant:\n%s", b.String(), want)
	}
}
