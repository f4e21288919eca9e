package stream

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/leatdev/leat/internal/core"
)

// Declarations that cannot work are refused, saying why.
func TestDeclareWindowedRefusesMisuse(t *testing.T) {
	cat, _ := newCatalog(t, core.Defaults{})
	s, err := Declare[order](cat, "orders", KeyField("customer"), Partitions(2))
	if err != nil {
		t.Fatal(err)
	}
	sum := MergeWith(func(a, b float64) float64 { return a + b })
	cases := []struct {
		name string
		kind WindowKind
		opts []WindowOption
		want string
	}{
		{"no kind", WindowKind{}, nil, "no window kind"},
		{"zero size", Tumbling(0), nil, "at least 1ms"},
		{"sub-ms size", Tumbling(1500 * time.Microsecond), nil, "whole milliseconds"},
		{"advance past size", Hopping(time.Second, 2*time.Second), nil, "must not exceed"},
		{"zero advance", Hopping(time.Second, 0), nil, "advance must be at least 1ms"},
		{"negative grace", Tumbling(time.Second), []WindowOption{Grace(-time.Second)}, "negative"},
		{"retention under grace", Tumbling(time.Second), []WindowOption{Grace(time.Minute), WindowRetention(time.Second)}, "shorter than the grace"},
		{"session without merge", Session(time.Second), nil, "need MergeWith"},
		{"event time of another type", Tumbling(time.Second), []WindowOption{EventTime(func(string) time.Time { return time.Time{} })}, "EventTime takes"},
		{"late to a stream of another type", Tumbling(time.Second), []WindowOption{LateTo[int](nil)}, "LateTo takes"},
		{"merge of another type", Session(time.Second), []WindowOption{MergeWith(func(a, b int) int { return a + b })}, "MergeWith takes"},
		{"nil codec", Tumbling(time.Second), []WindowOption{WindowCodec(nil)}, "codec is nil"},
	}
	for _, c := range cases {
		_, err := DeclareWindowed[float64](s, "p", "w", c.kind, c.opts...)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error saying %q", c.name, err, c.want)
		}
	}
	if _, err := DeclareWindowed[float64](s, "p", "w", Session(time.Second), sum); err != nil {
		t.Fatal(err)
	}
	if _, err := DeclareTable[float64](s, "p", "w"); !errors.Is(err, ErrConflict) {
		t.Errorf("a table named as a windowed table: %v, want ErrConflict", err)
	}
	if _, err := DeclareWindowed[float64](s, "p", "bad name!", Tumbling(time.Second)); err == nil {
		t.Error("a bad name accepted")
	}
}

// Window fields and records read back what was written, whatever the key.
func TestWindowFieldsAndRecords(t *testing.T) {
	for _, key := range []string{"a", "/pricing", "w1/x", "", "ключ"} {
		for _, start := range []int64{0, 60_000, -120_000, 1_767_268_800_000} {
			got, k, ok := parseWindowField(windowField(start, key))
			if !ok || got != start || k != key {
				t.Errorf("field of (%d, %q) parses as (%d, %q, %v)", start, key, got, k, ok)
			}
		}
	}
	for _, f := range []string{"t", "l", "w", "wx/a", "w12"} {
		if _, _, ok := parseWindowField(f); ok {
			t.Errorf("%q parsed as a window field", f)
		}
	}
	for _, r := range []windowRec{{End: 60_000, Data: []byte{1, 2}}, {Closed: true, End: -5}, {End: 1 << 50}} {
		got, err := decodeWindow(encodeWindow(r))
		if err != nil || got.Closed != r.Closed || got.End != r.End || string(got.Data) != string(r.Data) {
			t.Errorf("%+v reads back as %+v, %v", r, got, err)
		}
	}
	if _, err := decodeWindow([]byte("x12345678")); err == nil {
		t.Error("a malformed record decoded")
	}
}

// The windows an event falls in: k*advance <= t < k*advance+size.
func TestFloorDivWindows(t *testing.T) {
	for _, c := range []struct{ a, b, q int64 }{{7, 2, 3}, {-7, 2, -4}, {-8, 2, -4}, {0, 5, 0}, {-1, 5, -1}} {
		if q := floorDiv(c.a, c.b); q != c.q {
			t.Errorf("floorDiv(%d, %d) = %d, want %d", c.a, c.b, q, c.q)
		}
	}
}
