package schema

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

type Item struct {
	SKU   string `json:"sku"`
	Count uint8  `json:"count"`
}

type Base struct {
	Tenant string `json:"tenant"`
}

type Order struct {
	Base
	ID       int64             `json:"id"`
	Amount   int32             `json:"amount"`
	Customer string            `json:"customer"`
	Price    float32           `json:"price"`
	Paid     bool              `json:"paid"`
	Items    []Item            `json:"items"`
	Pair     [2]int            `json:"pair"`
	Blob     []byte            `json:"blob"`
	At       time.Time         `json:"at"`
	Tags     map[string]string `json:"tags"`
	ByDay    map[uint16]int    `json:"by_day"`
	Extra    any               `json:"extra"`
	Note     *string           `json:"note"`
	Cents    int64             `json:"cents,string"`
	Skipped  string            `json:"-"`
	secret   string
}

type Node struct {
	Name     string `json:"name"`
	Children []Node `json:"children"`
}

// decodesJSON reports whether encoding/json, as a task queue's handlers
// decode payloads, decodes b into a T.
func decodesJSON[T any](b []byte) bool {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var v T
	return dec.Decode(&v) == nil
}

// TestSchemaAgreesWithEncodingJSON: a payload the schema accepts is one
// encoding/json decodes into the type, and one it refuses is refused, with
// the field named.
func TestSchemaAgreesWithEncodingJSON(t *testing.T) {
	s := Of(reflect.TypeFor[Order](), Options{Decoder: DecoderJSON})
	b, err := s.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	s, err = Parse(b) // as the standalone side reads it
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		json string
		want string // "" accepted, else a part of the error
	}{
		{`{"id":1,"amount":5,"customer":"ada"}`, ""},
		{`{"tenant":"t","items":[{"sku":"a","count":255}],"pair":[1,2,3],"blob":"aGk=","at":"2026-11-29T01:00:00Z"}`, ""},
		{`{"tags":{"a":"b"},"by_day":{"7":1},"extra":{"x":[1]},"note":null,"id":null}`, ""},
		{`{"cents":"125"}`, ""},             // ",string": the number in a string
		{`{"AMOUNT":5,"Customer":"x"}`, ""}, // encoding/json matches names in any case
		{`{"amout":5}`, `unknown field "amout" (did you mean "amount"?); known: amount, at, blob, by_day, cents, customer, extra, id, items, note, paid, pair, price, tags, tenant`},
		{`{"Skipped":"x"}`, `unknown field "Skipped"`},
		{`{"secret":"x"}`, `unknown field "secret"`},
		{`{"items":[{"sku":"a","cnt":1}]}`, `unknown field "items[0].cnt"`},
		{`{"amount":"5"}`, `field "amount": want an integer, got a string`},
		{`{"amount":2147483648}`, `field "amount": 2147483648 is out of range (-2147483648 to 2147483647)`},
		{`{"amount":5.0}`, `field "amount": 5.0 is not an integer`},
		{`{"amount":1e3}`, `not an integer`},
		{`{"items":[{"count":256}]}`, `field "items[0].count": 256 is out of range (0 to 255)`},
		{`{"items":[{"count":-1}]}`, `out of range`},
		{`{"price":1e39}`, `field "price": 1e39 is out of range`},
		{`{"paid":1}`, `want true or false`},
		{`{"blob":"!!"}`, `base64`},
		{`{"at":"yesterday"}`, `RFC 3339`},
		{`{"by_day":{"x":1}}`, `integer key`},
		{`{"by_day":{"70000":1}}`, `integer key`},
		{`{"tags":{"a":1}}`, `field "tags.a": want a string`},
		{`{"items":{}}`, `want an array`},
		{`[1]`, `want an object`},
	} {
		err := s.CheckJSON([]byte(tc.json))
		accepted := err == nil
		if tc.want == "" && err != nil {
			t.Errorf("%s: %v, want accepted", tc.json, err)
		}
		if tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%s: %v, want an error with %q", tc.json, err, tc.want)
		}
		if got := decodesJSON[Order]([]byte(tc.json)); got != accepted {
			t.Errorf("%s: schema accepts %v, encoding/json decodes %v", tc.json, accepted, got)
		}
	}
}

// TestSchemaStreamDecoder: a stream's JSON input matches names exactly,
// takes 12.0 as an integer and a Go array's exact length, and a required
// field must be there, not null.
func TestSchemaStreamDecoder(t *testing.T) {
	s := Of(reflect.TypeFor[Order](), Options{Decoder: DecoderStream, Required: []string{"customer"}})
	for _, tc := range []struct{ json, want string }{
		{`{"customer":"ada","amount":12.0,"pair":[1,2]}`, ""},
		{`{"customer":"ada","amount":1e3}`, ""},
		{`{"customer":"ada","Amount":1}`, `unknown field "Amount" (did you mean "amount"?)`},
		{`{"customer":"ada","pair":[1]}`, `want an array of 2 elements, got 1`},
		{`{"amount":1}`, `field "customer" is missing`},
		{`{"customer":null}`, `field "customer" is missing`},
		{`{"customer":"ada","amount":1.5}`, `1.5 is not an integer`},
	} {
		err := s.CheckJSON([]byte(tc.json))
		if tc.want == "" && err != nil {
			t.Errorf("%s: %v, want accepted", tc.json, err)
		}
		if tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%s: %v, want an error with %q", tc.json, err, tc.want)
		}
	}
}

// TestSchemaOfAnything: types that take any JSON have no schema; a type
// met inside itself is checked to there.
func TestSchemaOfAnything(t *testing.T) {
	for _, typ := range []reflect.Type{reflect.TypeFor[json.RawMessage](), reflect.TypeFor[map[string]any](), reflect.TypeFor[any]()} {
		if s := Of(typ, Options{Decoder: DecoderJSON}); s != nil {
			t.Errorf("%v: schema %+v, want none", typ, s)
		}
	}
	s := Of(reflect.TypeFor[Node](), Options{Decoder: DecoderJSON})
	if err := s.CheckJSON([]byte(`{"name":"a","children":[{"name":"b","children":[{"x":1}]}]}`)); err != nil {
		t.Errorf("a recursive type: %v, want its inner levels unchecked", err)
	}
	if err := s.CheckJSON([]byte(`{"nam":"a"}`)); err == nil {
		t.Error("a recursive type: an unknown top-level field accepted")
	}
}

// TestParseRefusesCorrupt: a registry entry that is not a schema this
// package writes is an error, never a check that lets everything through.
func TestParseRefusesCorrupt(t *testing.T) {
	for _, b := range []string{
		``, `{}`, `null`, `{"version":2,"decoder":"stream","type":{"kind":"any"}}`,
		`{"version":1,"decoder":"yaml","type":{"kind":"any"}}`,
		`{"version":1,"decoder":"stream"}`,
		`{"version":1,"decoder":"stream","type":{"kind":"thing"}}`,
		`{"version":1,"decoder":"stream","type":{"kind":"integer","min":"5","max":"1"}}`,
		`{"version":1,"decoder":"stream","type":{"kind":"integer","min":"x","max":"1"}}`,
		`{"version":1,"decoder":"stream","type":{"kind":"number","bits":16}}`,
		`{"version":1,"decoder":"stream","type":{"kind":"array"}}`,
		`{"version":1,"decoder":"stream","type":{"kind":"string","fields":[]}}`,
		`{"version":1,"decoder":"stream","type":{"kind":"object","fields":[{"name":"a","type":{"kind":"any"}},{"name":"a","type":{"kind":"any"}}]}}`,
		`{"version":1,"decoder":"stream","type":{"kind":"object"},"extra":1}`,
		`{"version":1,"decoder":"stream","type":{"kind":"map","key":{"kind":"string"},"elem":{"kind":"any"}}}`,
		`{"version":1,"decoder":"stream","type":{"kind":"object"},"required":[""]}`,
	} {
		if s, err := Parse([]byte(b)); err == nil {
			t.Errorf("Parse(%s) = %+v, want an error", b, s)
		}
	}
	deep := strings.Repeat(`{"kind":"array","elem":`, 80) + `{"kind":"any"}` + strings.Repeat(`}`, 80)
	if _, err := Parse([]byte(`{"version":1,"decoder":"stream","type":` + deep + `}`)); err == nil {
		t.Error("a schema nested 80 deep parsed")
	}
}

type shadow struct {
	A string
}

type shadowB struct {
	A string
}

type conflict struct {
	shadow
	shadowB
	B string
}

// TestJSONFieldsConflicts: two embedded fields of the same name at the same
// depth cancel out, as in encoding/json.
func TestJSONFieldsConflicts(t *testing.T) {
	got := JSONFields(reflect.TypeFor[conflict]())
	if len(got) != 1 || got[0].Name != "B" {
		t.Errorf("fields %+v, want B alone", got)
	}
	if decodesJSON[conflict]([]byte(`{"A":"x"}`)) {
		t.Error("encoding/json decodes the conflicting field: the test's premise is wrong")
	}
}

// FuzzParseCheck: any registry entry either parses or is refused, and a
// schema that parses checks any JSON without panicking.
func FuzzParseCheck(f *testing.F) {
	s, _ := Of(reflect.TypeFor[Order](), Options{Decoder: DecoderJSON}).Marshal()
	f.Add(s, []byte(`{"amount":5,"items":[{"count":1}],"by_day":{"1":2}}`))
	f.Add([]byte(`{"version":1,"decoder":"stream","type":{"kind":"map","key":{"kind":"integer","min":"0","max":"9"},"elem":{"kind":"array","len":2,"elem":{"kind":"number","bits":32}}}}`), []byte(`{"1":[1,2]}`))
	f.Add([]byte(`{"version":1,"decoder":"stream","type":{"kind":"object","fields":[{"name":"a","type":{"kind":"none"}}]},"required":["a"]}`), []byte(`{"a":null}`))
	f.Fuzz(func(t *testing.T, schema, record []byte) {
		s, err := Parse(schema)
		if err != nil {
			return
		}
		_ = s.CheckJSON(record)
	})
}
