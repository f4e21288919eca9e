package core_test

import (
	"bytes"
	"errors"
	"math"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/leatdev/leat/internal/core"
	"github.com/vmihailenco/msgpack/v5"
	"github.com/vmihailenco/msgpack/v5/msgpcode"
)

// The msgpack codec refuses a record with a string that is not UTF-8, in
// every string format (fixstr, str 8, 16, 32), as a value or a map key,
// however deep; bytes (bin), numbers of every width, extensions (a time)
// and valid text of any length, U+FFFD included, pass. Marshal and the
// batch encoder of sends agree.
func TestMsgpackCodecRefusesBadStrings(t *testing.T) {
	for _, n := range []int{1, 30, 200, 60_000, 70_000} { // fixstr, fixstr, str 8, str 16, str 32
		good := strings.Repeat("é", n/2) + "\uFFFD"
		bad := strings.Repeat("a", n) + "\xff"
		if err := marshalBoth(t, textRecord{Name: good}); err != nil {
			t.Errorf("%d bytes of text: %v", len(good), err)
		}
		for _, r := range []any{
			textRecord{Name: bad},
			textRecord{Name: "ok", Tags: map[string]string{"k": bad}},
			textRecord{Name: "ok", Tags: map[string]string{bad: "v"}},
			[]any{1, []any{map[string]any{"deep": []string{"x", bad}}}},
			bad,
		} {
			err := marshalBoth(t, r)
			if !errors.Is(err, errRefused) || !strings.Contains(err.Error(), "is not valid UTF-8") {
				t.Errorf("%d bytes with a bad one: %v, want refused", len(bad), err)
			}
		}
	}
	bigArray := make([]int, 70_000) // array 32
	for i := range bigArray {
		bigArray[i] = i * 1000
	}
	for _, v := range []any{
		textRecord{Name: "ok", Bytes: []byte{0xff, 0xfe, 0xc1}},
		[]any{nil, true, false, int8(-100), int16(-30_000), int32(-2e9), int64(math.MinInt64), uint8(200),
			uint16(60_000), uint32(4e9), uint64(math.MaxUint64), float32(1.5), math.Pi, -1, 127},
		time.Date(2026, 11, 24, 1, 2, 3, 4, time.UTC),
		bigArray,
		make([]string, 20), // array 16
		map[string]int{"a": 1, "b": 2, "c": 3, "d": 4, "e": 5, "f": 6, "g": 7, "h": 8, "i": 9, "j": 10,
			"k": 11, "l": 12, "m": 13, "n": 14, "o": 15, "p": 16, "q": 17}, // map 16
	} {
		if err := marshalBoth(t, v); err != nil {
			t.Errorf("%T: %v", v, err)
		}
	}
}

var errRefused = errors.New("refused")

// marshalBoth marshals v with the codec and with a batch encoder (through
// Compressed, which uses it too), and checks they agree.
func marshalBoth(t *testing.T, v any) error {
	t.Helper()
	_, err := core.MsgPack.Marshal(v)
	batchErr := core.CheckMsgpackText(encode(t, v))
	if (err == nil) != (batchErr == nil) {
		t.Fatalf("Marshal says %v, the check of the encoding %v", err, batchErr)
	}
	if err != nil {
		return errors.Join(errRefused, err)
	}
	return nil
}

func encode(t *testing.T, v any) []byte {
	t.Helper()
	var buf bytes.Buffer
	enc := msgpack.NewEncoder(&buf)
	enc.SetCustomStructTag("json")
	enc.UseCompactInts(true)
	if err := enc.Encode(v); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// For any bytes: the check never panics, and for a whole MessagePack value
// it refuses exactly those holding a string that is not UTF-8.
func FuzzCheckMsgpackText(f *testing.F) {
	for _, v := range []any{"x", "a\xff", map[string]any{"k\xfe": []byte{1}}, []any{1.5, uint64(1 << 40), "é"}} {
		var buf bytes.Buffer
		_ = msgpack.NewEncoder(&buf).Encode(v)
		f.Add(buf.Bytes())
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		err := core.CheckMsgpackText(b)
		r := bytes.NewReader(b)
		dec := msgpack.NewDecoder(r)
		want := true
		for r.Len() > 0 {
			ok, derr := allText(dec)
			if derr != nil {
				return // not whole MessagePack values this decoder reads: any verdict
			}
			want = want && ok
		}
		if (err == nil) != want {
			t.Fatalf("% x: check says %v, the decoder finds every string UTF-8: %v", b, err, want)
		}
	})
}

// allText decodes the next value of dec and reports whether its strings
// (values and map keys, however deep) are UTF-8.
func allText(dec *msgpack.Decoder) (bool, error) {
	c, err := dec.PeekCode()
	if err != nil {
		return false, err
	}
	items := 0
	switch {
	case msgpcode.IsString(c):
		s, err := dec.DecodeString()
		return utf8.ValidString(s), err
	case msgpcode.IsFixedMap(c) || c == msgpcode.Map16 || c == msgpcode.Map32:
		n, err := dec.DecodeMapLen()
		if err != nil {
			return false, err
		}
		items = 2 * n
	case msgpcode.IsFixedArray(c) || c == msgpcode.Array16 || c == msgpcode.Array32:
		n, err := dec.DecodeArrayLen()
		if err != nil {
			return false, err
		}
		items = n
	default:
		return true, dec.Skip()
	}
	ok := true
	for range items {
		good, err := allText(dec)
		if err != nil {
			return false, err
		}
		ok = ok && good
	}
	return ok, nil
}

// The check's cost beside the encoding's, for a record of a few fields:
//
//	go test -run XXX -bench Msgpack ./internal/core
func BenchmarkMsgpackMarshal(b *testing.B) {
	r := benchRecord()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := core.MsgPack.Marshal(r); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkCheckMsgpackText(b *testing.B) {
	data, err := core.MsgPack.Marshal(benchRecord())
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if err := core.CheckMsgpackText(data); err != nil {
			b.Fatal(err)
		}
	}
}

func benchRecord() any {
	return struct {
		ID       int64             `json:"id"`
		Customer string            `json:"customer"`
		Amount   float64           `json:"amount"`
		Items    []string          `json:"items"`
		Meta     map[string]string `json:"meta"`
	}{42, "customer-417", 19.99, []string{"apple", "pear", "plum"}, map[string]string{"source": "web", "région": "île-de-france"}}
}
