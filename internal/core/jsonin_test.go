package core_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/leatdev/leat/internal/core"
	"github.com/leatdev/leat/internal/rdb"
	"github.com/vmihailenco/msgpack/v5"
)

// payment names its fields differently for msgpack and for encoding/json,
// as a user's type may.
type payment struct {
	CustomerID string            `msgpack:"customer_id" json:"customerId"`
	Cents      int64             `msgpack:"cents" json:"cents"`
	Qty        uint8             `msgpack:"qty"`
	Rate       float32           `msgpack:"rate"`
	Tags       []string          `msgpack:"tags"`
	Extra      map[string]any    `msgpack:"extra"`
	Labels     map[string]string `msgpack:"labels"`
	At         time.Time         `msgpack:"at"`
	Ref        *int64            `msgpack:"ref"`
	Address    struct {
		Zip string `msgpack:"zip"`
	} `msgpack:"address"`
}

// Typed and untyped streams read JSON with the codec's field names, so both
// route a record by the same key and store the same record.
func TestEncodeJSONUsesCodecNames(t *testing.T) {
	t.Parallel()
	for _, codec := range []core.Codec{core.MsgPack, core.Compressed(core.MsgPack, core.Zstd)} {
		cat := newCatalog(t)
		typed, err := core.Declare[payment](cat, "payments", core.Spec{KeyField: "customer_id", Codec: codec})
		if err != nil {
			t.Fatal(err)
		}
		raw, err := core.Open(core.NewCatalog(cat.Client(), cat.Keys(), core.Defaults{}, nil), typed.Core.Definition())
		if err != nil {
			t.Fatal(err)
		}
		in := `{"customer_id":"c-1","cents":1250,"qty":3,"rate":0.5,"tags":["a"],"extra":{"n":18446744073709551615},` +
			`"labels":{"x":"y"},"at":"2024-05-01T10:00:00Z","ref":7,"address":{"zip":"75001"}}`
		te, err := typed.Core.EncodeJSON([]byte(in), nil)
		if err != nil {
			t.Fatalf("%s: typed: %v", codec.Name(), err)
		}
		re, err := raw.EncodeJSON([]byte(in), nil)
		if err != nil {
			t.Fatalf("%s: untyped: %v", codec.Name(), err)
		}
		if string(te.Key) != "c-1" || string(re.Key) != "c-1" || te.Partition != re.Partition {
			t.Fatalf("%s: typed key %q partition %d, untyped key %q partition %d", codec.Name(), te.Key, te.Partition, re.Key, re.Partition)
		}
		var got payment
		if err := typed.DecodeInto(&te, &got); err != nil {
			t.Fatal(err)
		}
		if got.CustomerID != "c-1" || got.Cents != 1250 || got.Qty != 3 || got.Extra["n"] != uint64(math.MaxUint64) ||
			got.Address.Zip != "75001" || got.Ref == nil || *got.Ref != 7 || !got.At.Equal(time.Date(2024, 5, 1, 10, 0, 0, 0, time.UTC)) {
			t.Fatalf("%s: typed entry decodes to %+v", codec.Name(), got)
		}
	}
}

func TestEncodeJSONRefusesBadRecords(t *testing.T) {
	t.Parallel()
	cat := newCatalog(t)
	typed, err := core.Declare[payment](cat, "payments", core.Spec{KeyField: "customer_id"})
	if err != nil {
		t.Fatal(err)
	}
	raw, err := core.Open(cat, core.Definition{Name: "raw", Partitions: 4, KeyField: "k", Size: 10, Codec: "msgpack"})
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		core *core.Core
		in   string
		want string
	}{
		// The json tag is not the codec's name of the field.
		{typed.Core, `{"customerId":"c-1"}`, `key field "customer_id" is missing`},
		{typed.Core, `{"customer_id":"c-1","customerId":"c-1"}`, `field "customerId": unknown field; did you mean "customer_id"?`},
		{typed.Core, `{"customer_id":"c-1","custmer":1}`, `field "custmer": unknown field (the record's fields are customer_id, cents,`},
		{typed.Core, `{"customer_id":"c-1","address":{"zap":"1"}}`, `field "address.zap": unknown field; did you mean "zip"?`},
		{typed.Core, `{"customer_id":"c-1","cents":1.5}`, `field "cents": 1.5 is not an integer`},
		{typed.Core, `{"customer_id":"c-1","cents":9223372036854775808}`, `field "cents": 9223372036854775808 is out of range (-9223372036854775808 to 9223372036854775807)`},
		{typed.Core, `{"customer_id":"c-1","qty":256}`, `field "qty": 256 is out of range (0 to 255)`},
		{typed.Core, `{"customer_id":"c-1","qty":-1}`, `field "qty": -1 is out of range (0 to 255)`},
		{typed.Core, `{"customer_id":"c-1","rate":1e39}`, `field "rate": 1e39 is out of range`},
		{typed.Core, `{"customer_id":7}`, `field "customer_id": want a string, got a number`},
		{typed.Core, `{"customer_id":"c-1","cents":"12"}`, `field "cents": want an integer, got a string`},
		{typed.Core, `{"customer_id":"c-1","tags":"a"}`, `field "tags": want an array, got a string`},
		{typed.Core, `{"customer_id":"c-1","tags":[1]}`, `field "tags[0]": want a string, got a number`},
		{typed.Core, `{"customer_id":"c-1","extra":{"n":18446744073709551616}}`, `field "extra.n": integer 18446744073709551616 does not fit in 64 bits`},
		{typed.Core, `{"customer_id":"c-1","at":"yesterday"}`, `field "at": invalid value`},
		{typed.Core, `[1]`, `want a JSON object, got an array`},
		{typed.Core, `{"customer_id":"c-1"} {}`, `more after the object`},
		{typed.Core, `{"customer_id":"c-1"}}`, `more after the object`},
		{typed.Core, `{"customer_id":"c-1"`, `the record ends too early`},
		{typed.Core, "{\"customer_id\":\"c-\xff\"}", `invalid UTF-8 at byte 19`},
		{typed.Core, `{"customer_id":"c-\ud800"}`, `\ud800 is half of a UTF-16 surrogate pair`},
		{raw, `{"k":18446744073709551616}`, `field "k": integer 18446744073709551616 does not fit in 64 bits`},
		{raw, `{"k":-9223372036854775809}`, `does not fit in 64 bits`},
		{raw, `{"k":"a","n":1e999}`, `field "n": number 1e999 is out of range`},
		{raw, `{"k":1.5}`, `key field "k" holds a number with a fraction or an exponent`},
		{raw, `{"k":{}}`, `key field "k" holds an object or an array`},
		{raw, `{"k":null}`, `key field "k" is missing`},
		{raw, `{"a":1}`, `key field "k" is missing`},
		{raw, ``, `empty record`},
		{raw, `null`, `want a JSON object, got null`},
		{raw, "{\"k\":\"\xe9t\xe9\"}", `invalid UTF-8 at byte 7`},
		// A name twice: decoders keep one value, or refuse the text.
		{typed.Core, `{"customer_id":"c-1","cents":1,"cents":2}`, `field "cents" appears twice in its object`},
		{raw, `{"k":"a","k":"b"}`, `field "k" appears twice`},
		{raw, `{"k":"a","x":{"y":1,"\u0079":2}}`, `field "x.y" appears twice`},
	}
	for _, tc := range cases {
		_, err := tc.core.EncodeJSON([]byte(tc.in), nil)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("EncodeJSON(%s) = %v, want an error containing %q", tc.in, err, tc.want)
			continue
		}
		for _, goName := range []string{"int64", "uint8", "float", "interface", "map[", "[]", "stream_test", "time.Time", "json:"} {
			if strings.Contains(err.Error(), goName) {
				t.Errorf("EncodeJSON(%s): error %q names Go type %q", tc.in, err, goName)
			}
		}
	}

	// Exact values that are accepted.
	ok := []struct {
		in   string
		want payment
	}{
		{`{"customer_id":"c","cents":1e3,"qty":255}`, payment{CustomerID: "c", Cents: 1000, Qty: 255}},
		{`{"customer_id":"c","cents":-12.0,"tags":null}`, payment{CustomerID: "c", Cents: -12}},
		{`{"customer_id":"c","cents":-9223372036854775808}`, payment{CustomerID: "c", Cents: math.MinInt64}},
	}
	for _, tc := range ok {
		e, err := typed.Core.EncodeJSON([]byte(tc.in), nil)
		if err != nil {
			t.Errorf("EncodeJSON(%s): %v", tc.in, err)
			continue
		}
		var got payment
		if err := typed.DecodeInto(&e, &got); err != nil || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("EncodeJSON(%s) decodes to %+v, %v; want %+v", tc.in, got, err, tc.want)
		}
	}
}

// lopsided encodes itself as a string but decodes only from an integer: a
// record holding one encodes, but no processor could decode it.
type lopsided int

func (l lopsided) EncodeMsgpack(enc *msgpack.Encoder) error { return enc.EncodeString("x") }
func (l *lopsided) DecodeMsgpack(dec *msgpack.Decoder) error {
	n, err := dec.DecodeInt()
	*l = lopsided(n)
	return err
}

// EncodeJSON decodes each entry it encoded, so a record that would make the
// stream's processors fail is refused before it is sent.
func TestEncodeJSONDecodesWhatItEncodes(t *testing.T) {
	t.Parallel()
	type rec struct {
		K string   `msgpack:"k"`
		L lopsided `msgpack:"l"`
	}
	cat := newCatalog(t)
	s, err := core.Declare[rec](cat, "lop", core.Spec{KeyField: "k"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Core.EncodeJSON([]byte(`{"k":"a","l":1}`), nil); err == nil || !strings.Contains(err.Error(), "does not decode again") {
		t.Fatalf("EncodeJSON = %v, want a refusal", err)
	}
	if _, err := s.Core.EncodeJSON([]byte(`{"k":"a"}`), nil); err == nil {
		t.Fatal("a zero lopsided encodes as a string too: want a refusal")
	}
}

// fuzzRecord has fields of the kinds JSON input must map exactly.
type fuzzRecord struct {
	Customer string            `msgpack:"customer"`
	Cents    int64             `msgpack:"cents"`
	Qty      uint8             `msgpack:"qty"`
	Rate     float64           `msgpack:"rate"`
	Tags     []string          `msgpack:"tags"`
	Extra    map[string]any    `msgpack:"extra"`
	Labels   map[string]string `msgpack:"labels"`
	Ref      *int              `msgpack:"ref"`
}

// FuzzEncodeJSON checks the promise of JSON input: whatever the input, no
// panic, and a record that is accepted, by a typed stream or an untyped
// one, decodes into the stream's type, keyed as it says.
func FuzzEncodeJSON(f *testing.F) {
	for _, s := range []string{
		`{"customer":"c-1","cents":1250,"qty":3,"rate":0.5,"tags":["a"],"extra":{"n":18446744073709551615},"labels":{"x":"y"},"ref":7}`,
		`{"customer":"c-\u00e9"}`, `{"customer":7}`, `{"customer":"c","cents":1.5}`, `[1]`, `{"customer":"c"} {}`,
		"\xef\xbb\xbf{\"customer\":\"c\"}", `{"customer":"\ud800"}`,
	} {
		f.Add([]byte(s))
	}
	cat := core.NewCatalog(nil, rdb.NewKeySpace("", "fuzz"), core.Defaults{}, nil)
	typed, err := core.Declare[fuzzRecord](cat, "typed", core.Spec{KeyField: "customer"})
	if err != nil {
		f.Fatal(err)
	}
	raw, err := core.Open(cat, core.Definition{Name: "raw", Partitions: 8, KeyField: "customer", Size: 10, Codec: "msgpack"})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if e, err := typed.Core.EncodeJSON(data, nil); err == nil {
			var v fuzzRecord
			if err := typed.DecodeInto(&e, &v); err != nil {
				t.Fatalf("accepted %q, which does not decode: %v", data, err)
			}
			if string(e.Key) != v.Customer || e.Partition != typed.Core.PartitionOf([]byte(v.Customer)) {
				t.Fatalf("accepted %q keyed %q on %d, record %+v", data, e.Key, e.Partition, v)
			}
		}
		if e, err := raw.EncodeJSON(data, nil); err == nil {
			c, err := raw.Decoder(e.Codec)
			if err != nil {
				t.Fatal(err)
			}
			var m map[string]any
			if err := c.Unmarshal(e.Data, &m); err != nil {
				t.Fatalf("accepted %q, which does not decode: %v", data, err)
			}
			if len(e.Key) == 0 && m["customer"] != "" {
				t.Fatalf("accepted %q with an empty key", data)
			}
		}
	})
}

func TestCheckJSONTextRefusesNamesTwice(t *testing.T) {
	t.Parallel()
	many := func(dup bool) string { // an object of 40 names, the last one the first's again
		var b strings.Builder
		b.WriteString("{")
		for i := range 40 {
			n := i
			if dup && i == 39 {
				n = 0
			}
			fmt.Fprintf(&b, `"n%d":%d,`, n, i)
		}
		return strings.TrimSuffix(b.String(), ",") + "}"
	}
	cases := []struct{ in, want string }{
		{`{"a":1,"b":{"a":1},"c":[{"a":1},{"a":2}]}`, ""},
		{`{"a":"\"a\"","b":"a\\","c":1}`, ""}, // escapes inside strings are not names
		{`{"a":{"b":1,"c":2},"d":[{"e":1},{"e":2,"f":{"e":3,"e":4}}]}`, `field "d[1].f.e" appears twice`},
		{`[{"a":1},{"a":1,"a":2}]`, `field "[1].a" appears twice`},
		{`{"é":1,"\u00e9":2}`, `field "é" appears twice`},
		{`{"a\"b":1,"a\u0022b":2}`, `field "a\"b" appears twice`},
		{many(false), ""},
		{many(true), `field "n0" appears twice`},
		{`{"a":[1,2,{"a":3}],"a":4}`, `field "a" appears twice`},
	}
	for _, tc := range cases {
		err := core.CheckJSONText([]byte(tc.in))
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("CheckJSONText(%s) = %v, want nil", tc.in, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("CheckJSONText(%s) = %v, want an error containing %s", tc.in, err, tc.want)
		}
	}
}

// FuzzCheckJSONTextNamesTwice compares the check for names twice with a
// reference built on encoding/json's tokens, on valid JSON.
func FuzzCheckJSONTextNamesTwice(f *testing.F) {
	for _, s := range []string{`{"a":1,"a":2}`, `{"a":{"a":1},"b":[{"c":1,"c":2}]}`, `[{"\u0061":1,"a":2}]`, `{"a\\":1,"a\\\\":2}`, `"x"`, `{}`,
		`{"a":1,"b":1,"c":1,"d":1,"e":1,"f":1,"g":1,"h":1,"i":1,"j":1,"k":1,"l":1,"m":1,"n":1,"o":1,"p":1,"q":{"a":1,"a":2},"r":1,"a":1}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		b := []byte(s)
		if !json.Valid(b) || !utf8.Valid(b) {
			return
		}
		err := core.CheckJSONText(b)
		if err != nil && strings.Contains(err.Error(), "surrogate") {
			return // CheckJSONText's other refusal, found first
		}
		want := namesTwice(t, b)
		if got := err != nil && strings.Contains(err.Error(), "appears twice"); got != want {
			t.Fatalf("CheckJSONText(%s) = %v; a name twice: %v", s, err, want)
		}
	})
}

// namesTwice reports whether an object of b, valid JSON, holds a name twice.
func namesTwice(t *testing.T, b []byte) bool {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	type frame struct {
		obj   bool
		key   bool
		names map[string]bool
	}
	var stack []*frame
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			return false
		}
		if err != nil {
			t.Fatalf("tokens of valid JSON %s: %v", b, err)
		}
		var top *frame
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		if d, ok := tok.(json.Delim); ok {
			switch d {
			case '{', '[':
				if top != nil && top.obj {
					top.key = true
				}
				stack = append(stack, &frame{obj: d == '{', key: true, names: map[string]bool{}})
			default:
				stack = stack[:len(stack)-1]
				if len(stack) > 0 && stack[len(stack)-1].obj {
					stack[len(stack)-1].key = true
				}
			}
			continue
		}
		if top == nil || !top.obj {
			continue
		}
		if top.key {
			name := tok.(string)
			if top.names[name] {
				return true
			}
			top.names[name] = true
			top.key = false
		} else {
			top.key = true
		}
	}
}
