package core

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/leatdev/leat/internal/rdb"
	"github.com/vmihailenco/msgpack/v5"
)

// planRecord has a field of every type a plan decodes, named every way the
// msgpack codec names fields.
type planRecord struct {
	S      string `msgpack:"s"`
	B      bool   `json:"b,omitempty"`
	I      int
	I8     int8    `msgpack:"i8,omitempty"`
	I16    int16   `msgpack:"i16" json:"ignored"`
	I32    int32   `json:"i32,string"`
	I64    int64   `msgpack:"i64"`
	U      uint    `msgpack:"u"`
	U8     uint8   `msgpack:"u8"`
	U16    uint16  `msgpack:"u16"`
	U32    uint32  `msgpack:"u32"`
	U64    uint64  `msgpack:"u64"`
	F32    float32 `msgpack:"f32"`
	F64    float64 `msgpack:"f64"`
	Skip   string  `msgpack:"-"`
	hidden int
}

var planNames = []string{"s", "b", "I", "i8", "i16", "i32", "i64", "u", "u8", "u16", "u32", "u64", "f32", "f64"}

// decodeBoth decodes data as a stream of planRecord does (the plan, else
// the library) and as the library alone does, and fails t when the two
// differ in value or error. It reports whether the plan decoded it alone.
func decodeBoth(t *testing.T, data []byte) (planned bool) {
	t.Helper()
	plan := newMsgpackPlan[planRecord]()
	var lib planRecord
	libErr := MsgPack.Unmarshal(data, &lib)
	var got planRecord
	planned = plan.decode(data, unsafe.Pointer(&got))
	var gotErr error
	if !planned {
		got = planRecord{}
		gotErr = MsgPack.Unmarshal(data, &got)
	}
	if (gotErr == nil) != (libErr == nil) {
		t.Fatalf("% x: plan error %v, library error %v", data, gotErr, libErr)
	}
	// %#v tells NaNs, negative zeros and every field apart
	if g, l := fmt.Sprintf("%#v", got), fmt.Sprintf("%#v", lib); libErr == nil && g != l {
		t.Fatalf("% x: plan decoded\n%s\nthe library\n%s", data, g, l)
	}
	if planned && libErr != nil {
		t.Fatalf("% x: the plan decoded what the library refuses (%v)", data, libErr)
	}
	return planned
}

// strLens are string lengths in runes of two bytes: fixstr and str 8
// (TestMsgpackPlanMatchesLibrary adds str 16 and str 32)
var strLens = []int{0, 1, 15, 16, 127, 128}

func randomPlanRecord(r *rand.Rand) planRecord {
	ints := []int64{0, 1, -1, 127, 128, -32, -33, 255, 256, -128, -129, 65535, 65536, -32768, -32769,
		math.MaxInt32, math.MinInt32, math.MaxInt64, math.MinInt64, r.Int64(), -r.Int64()}
	pick := func() int64 { return ints[r.IntN(len(ints))] }
	floats := []float64{0, math.Copysign(0, -1), 1.5, -2.25, math.Inf(1), math.NaN(), math.MaxFloat64, math.SmallestNonzeroFloat64, r.NormFloat64()}
	return planRecord{
		S: strings.Repeat("é", strLens[r.IntN(len(strLens))]), B: r.IntN(2) == 1,
		I: int(pick()), I8: int8(pick()), I16: int16(pick()), I32: int32(pick()), I64: pick(),
		U: uint(pick()), U8: uint8(pick()), U16: uint16(pick()), U32: uint32(pick()), U64: uint64(pick()),
		F32: float32(floats[r.IntN(len(floats))]), F64: floats[r.IntN(len(floats))],
	}
}

// TestMsgpackPlanMatchesLibrary: a stream whose records are flat structs of
// scalars decodes them with a plan; whatever the bytes, the result is the
// library's, value and error alike, and what leat's encoder writes is
// decoded by the plan alone.
func TestMsgpackPlanMatchesLibrary(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for i := range 500 {
		rec := randomPlanRecord(r)
		switch {
		case i == 0:
			rec.S = strings.Repeat("é", 40000) // str 32
		case i%50 == 1:
			rec.S = strings.Repeat("é", 200+i) // str 16
		}
		data, err := MsgPack.Marshal(&rec)
		if err != nil {
			t.Fatal(err)
		}
		if !decodeBoth(t, data) {
			t.Fatalf("% x: what the codec encodes was left to the library", data)
		}
		// every prefix, and bytes changed at random
		for i := range min(len(data), 64) {
			decodeBoth(t, data[:i])
		}
		for range 20 {
			m := append([]byte(nil), data...)
			m[r.IntN(len(m))] = byte(r.IntN(256))
			decodeBoth(t, m)
		}
		decodeBoth(t, append(data, 0xc0)) // trailing data
	}
}

// TestMsgpackPlanFormats writes each field in every msgpack format the
// library's decoder of its kind accepts, and some it refuses, beside
// duplicate, unknown and missing fields, nil values and maps of each size.
func TestMsgpackPlanFormats(t *testing.T) {
	be16 := func(v uint16) []byte { return binary.BigEndian.AppendUint16(nil, v) }
	be32 := func(v uint32) []byte { return binary.BigEndian.AppendUint32(nil, v) }
	be64 := func(v uint64) []byte { return binary.BigEndian.AppendUint64(nil, v) }
	values := [][]byte{
		{0x00}, {0x7f}, {0xe0}, {0xff}, {0xc0}, {0xc2}, {0xc3},
		{0xcc, 0xff}, {0xd0, 0x80}, append([]byte{0xcd}, be16(0xffff)...), append([]byte{0xd1}, be16(0x8000)...),
		append([]byte{0xce}, be32(0xffffffff)...), append([]byte{0xd2}, be32(0x80000000)...),
		append([]byte{0xcf}, be64(math.MaxUint64)...), append([]byte{0xd3}, be64(1<<63)...),
		append([]byte{0xcf}, be64(1<<53+1)...), append([]byte{0xd3}, be64(uint64(1<<60+3))...),
		append([]byte{0xd3}, be64(1<<60+1<<36+1)...), // a float32 of it rounds up; of its float64, down
		append([]byte{0xca}, be32(math.Float32bits(-1.5))...), append([]byte{0xcb}, be64(math.Float64bits(1e300))...),
		append([]byte{0xcb}, be64(math.Float64bits(math.NaN()))...),
		{0xa3, 'a', 'b', 'c'}, {0xa0}, {0xd9, 2, 'h', 'i'}, append(append([]byte{0xda}, be16(3)...), "xyz"...),
		append(append([]byte{0xdb}, be32(1)...), 'q'), {0xc4, 2, 0xff, 0x00}, append(append([]byte{0xc5}, be16(1)...), 7),
		append([]byte{0xc6}, be32(0)...), {0x91, 0x01}, {0x81, 0xa1, 'a', 0x01}, {0xd4, 0x01, 0x02}, {0xc1},
	}
	mapOf := func(pairs ...[]byte) []byte {
		n := len(pairs) / 2
		var b []byte
		switch {
		case n <= 15:
			b = []byte{0x80 | byte(n)}
		default:
			b = append([]byte{0xde}, be16(uint16(n))...)
		}
		for _, p := range pairs {
			b = append(b, p...)
		}
		return b
	}
	name := func(s string) []byte { return append([]byte{0xa0 | byte(len(s))}, s...) }
	// decodeBoth of data and of each of its prefixes
	decodeBoth := func(t *testing.T, data []byte) {
		t.Helper()
		for i := range len(data) + 1 {
			decodeBoth(t, data[:i])
		}
	}
	for _, n := range planNames {
		for _, v := range values {
			decodeBoth(t, mapOf(name(n), v))
			decodeBoth(t, mapOf(name("s"), name("first"), name(n), v, name(n), values[0])) // duplicate: the last wins
		}
		// a field name as str 8, bin 8 and nil
		decodeBoth(t, mapOf(append([]byte{0xd9, byte(len(n))}, n...), values[0]))
		decodeBoth(t, mapOf(append([]byte{0xc4, byte(len(n))}, n...), values[0]))
	}
	decodeBoth(t, mapOf([]byte{0xc0}, values[0]))
	decodeBoth(t, mapOf(name("unknown"), values[0], name("I"), values[1]))
	decodeBoth(t, mapOf(name("Skip"), name("x")))
	decodeBoth(t, mapOf(name("hidden"), values[1]))
	decodeBoth(t, mapOf(name("-"), values[1]))
	decodeBoth(t, mapOf())
	decodeBoth(t, []byte{0xc0})
	decodeBoth(t, []byte{0x90})
	decodeBoth(t, []byte{})
	var many [][]byte
	for i := range 20 {
		many = append(many, name(planNames[i%len(planNames)]), values[i])
	}
	decodeBoth(t, mapOf(many...)) // map 16
	decodeBoth(t, append(append([]byte{0xdf}, be32(1)...), append(name("I"), 0x05)...))
	decodeBoth(t, append(append([]byte{0xdf}, be32(math.MaxUint32)...), append(name("I"), 0x05)...))
}

// FuzzMsgpackPlan: any bytes decode through a plan as the library decodes
// them.
func FuzzMsgpackPlan(f *testing.F) {
	r := rand.New(rand.NewPCG(3, 4))
	for range 8 {
		rec := randomPlanRecord(r)
		data, err := MsgPack.Marshal(&rec)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Add([]byte{0x81, 0xa1, 'I', 0xd3, 0x80, 0, 0, 0, 0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, data []byte) { decodeBoth(t, data) })
}

// TestMsgpackPlanTypes: only flat structs of predeclared scalar types, whose
// field names the plan reads as the library does, get a plan.
func TestMsgpackPlanTypes(t *testing.T) {
	type named int
	type inner struct{ A int }
	type withNamed struct{ D time.Duration }
	type withOwnType struct{ N named }
	type withStruct struct{ In inner }
	type withPointer struct{ P *int }
	type withSlice struct{ B []byte }
	type withMap struct{ M map[string]int }
	type withAny struct{ V any }
	type embedded struct{ inner }
	type asArray struct {
		_msgpack struct{} `msgpack:",as_array"`
		A        int
	}
	type alias struct {
		A int `msgpack:"a,alias:b"`
	}
	type interned struct {
		S string `msgpack:"s,intern"`
	}
	type inline struct {
		A int `msgpack:",inline"`
	}
	type quoted struct {
		A int `msgpack:"'a'"`
	}
	type duplicate struct {
		A int `msgpack:"x"`
		B int `json:"x"`
	}
	type skipped struct {
		A   int
		Any any `msgpack:"-"`
		b   inner
	}
	type empty struct{}
	for _, c := range []struct {
		name string
		plan *msgpackPlan
		want bool
	}{
		{"planRecord", newMsgpackPlan[planRecord](), true},
		{"skipped", newMsgpackPlan[skipped](), true},
		{"empty", newMsgpackPlan[empty](), true},
		{"time.Duration field", newMsgpackPlan[withNamed](), false},
		{"named int field", newMsgpackPlan[withOwnType](), false},
		{"struct field", newMsgpackPlan[withStruct](), false},
		{"pointer field", newMsgpackPlan[withPointer](), false},
		{"[]byte field", newMsgpackPlan[withSlice](), false},
		{"map field", newMsgpackPlan[withMap](), false},
		{"interface field", newMsgpackPlan[withAny](), false},
		{"embedded struct", newMsgpackPlan[embedded](), false},
		{"as_array", newMsgpackPlan[asArray](), false},
		{"alias", newMsgpackPlan[alias](), false},
		{"intern", newMsgpackPlan[interned](), false},
		{"inline", newMsgpackPlan[inline](), false},
		{"quoted name", newMsgpackPlan[quoted](), false},
		{"duplicate name", newMsgpackPlan[duplicate](), false},
		{"map", newMsgpackPlan[map[string]any](), false},
		{"pointer", newMsgpackPlan[*planRecord](), false},
		{"int", newMsgpackPlan[int](), false},
	} {
		if got := c.plan != nil; got != c.want {
			t.Errorf("%s: plan %v, want %v", c.name, got, c.want)
		}
	}
	// the names it decodes are the library's
	if p := newMsgpackPlan[planRecord](); len(p.fields) != len(planNames) || len(p.list) != len(planNames) {
		t.Fatalf("plan of %d fields, want %d", len(p.fields), len(planNames))
	}
	for _, n := range planNames {
		if _, ok := newMsgpackPlan[planRecord]().fields[n]; !ok {
			t.Errorf("no field %q in the plan", n)
		}
	}
}

// TestDecodeIntoUsesPlan: a stream of flat records decodes its msgpack
// entries with the plan (as the library would), and entries of other codecs
// with their codec.
func TestDecodeIntoUsesPlan(t *testing.T) {
	cat := NewCatalog(nil, rdb.NewKeySpace("test", "app"), Defaults{}, nil)
	s, err := Declare[planRecord](cat, "plan", Spec{KeyField: "s"})
	if err != nil {
		t.Fatal(err)
	}
	if s.plan == nil {
		t.Fatal("no plan for a flat record")
	}
	rec := planRecord{S: "k", I: -3, U64: math.MaxUint64, F64: 0.5}
	for _, c := range []Codec{MsgPack, JSON} {
		data, err := c.Marshal(&rec)
		if err != nil {
			t.Fatal(err)
		}
		var got planRecord
		if err := s.DecodeInto(&Entry{ID: "1-1", Codec: c.Name(), Data: data}, &got); err != nil {
			t.Fatal(err)
		}
		if got != rec {
			t.Fatalf("%s: decoded %+v, want %+v", c.Name(), got, rec)
		}
	}
	// what the plan leaves to the library fails as it fails there
	got := planRecord{S: "before"}
	err = s.DecodeInto(&Entry{ID: "1-2", Codec: "msgpack", Data: []byte{0x82, 0xa1, 's', 0xa1, 'x', 0xa1, 'I', 0xa1, 'y'}}, &got)
	if err == nil || !strings.Contains(err.Error(), "decod") {
		t.Fatalf("a string in an int field decoded: %v", err)
	}
}

// BenchmarkDecodeInto decodes a small record with the plan and with the
// library: go test -run '^$' -bench DecodeInto ./internal/core
func BenchmarkDecodeInto(b *testing.B) {
	type order = benchOrder
	data, err := MsgPack.Marshal(&order{ID: 123456, Customer: "customer-17", Amount: 30.25, Note: strings.Repeat("x", 64)})
	if err != nil {
		b.Fatal(err)
	}
	plan := newMsgpackPlan[order]()
	b.Run("plan", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var o order
			if !plan.decode(data, unsafe.Pointer(&o)) {
				b.Fatal("not decoded")
			}
		}
	})
	b.Run("library", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var o order
			if err := MsgPack.Unmarshal(data, &o); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// planSparse leaves every empty field out.
type planSparse struct {
	S   string  `msgpack:"s,omitempty"`
	B   bool    `msgpack:"b,omitempty"`
	I   int     `msgpack:"i,omitempty"`
	I8  int8    `msgpack:"i8,omitempty"`
	U16 uint16  `msgpack:"u16,omitempty"`
	U64 uint64  `msgpack:"u64,omitempty"`
	F32 float32 `msgpack:"f32,omitempty"`
	F64 float64 `json:"f64,omitempty"`
}

// planWide has more fields than a fixmap holds.
type planWide struct {
	A, B, C, D, E, F, G, H, I, J, K, L, M, N, O, P int64
	Q                                              string
}

// encodeBoth encodes v with its type's plan (alone, and in batches of one
// and of many) and with the codec, and fails t when the bytes differ or
// one refuses what the other accepts.
func encodeBoth[T any](t *testing.T, v *T) {
	t.Helper()
	plan := newMsgpackPlan[T]()
	if plan == nil {
		t.Fatalf("no plan for %T", v)
	}
	lib, libErr := MsgPack.Marshal(v)
	size, ok := plan.size(unsafe.Pointer(v))
	if ok != (libErr == nil) {
		t.Fatalf("%+v: plan encodes %v, library error %v", *v, ok, libErr)
	}
	if !ok {
		return
	}
	got := plan.appendEncoded([]byte{0xff}, unsafe.Pointer(v))
	if string(got[1:]) != string(lib) {
		t.Fatalf("%+v: plan encoded\n% x\nthe library\n% x", *v, got[1:], lib)
	}
	if size < len(lib) {
		t.Fatalf("%+v: size %d, encoded in %d", *v, size, len(lib))
	}
	for _, n := range []int{1, 100} {
		b := planBatch{plan: plan, chunk: batchChunk(n)}
		one, _ := b.encode(unsafe.Pointer(v), n)
		two, _ := b.encode(unsafe.Pointer(v), n)
		if string(one) != string(lib) || string(two) != string(lib) || (len(one) > 0 && &one[:cap(one)][cap(one)-1] == &two[0]) {
			t.Fatalf("%+v: batch of %d encoded % x and % x", *v, n, one, two)
		}
	}
}

// TestMsgpackPlanEncodes: what a plan encodes is, byte for byte, what the
// codec encodes, and a string that is not UTF-8 is left to the codec.
func TestMsgpackPlanEncodes(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for i := range 500 {
		rec := randomPlanRecord(r)
		switch {
		case i == 0:
			rec.S = strings.Repeat("é", 40000)
		case i%50 == 1:
			rec.S = strings.Repeat("é", 200+i)
		}
		encodeBoth(t, &rec)
		sparse := planSparse{}
		if r.IntN(2) == 0 {
			sparse = planSparse{S: rec.S, B: rec.B, I: rec.I, I8: rec.I8, U16: rec.U16, U64: rec.U64, F32: rec.F32, F64: rec.F64}
		}
		if r.IntN(3) == 0 {
			sparse.F64 = math.Copysign(0, -1) // empty too
		}
		encodeBoth(t, &sparse)
		wide := planWide{A: rec.I64, H: int64(rec.I8), P: -1, Q: rec.S}
		encodeBoth(t, &wide)
	}
	for _, s := range []string{"\xff", "ok\xc3", "a\xed\xa0\x80b"} { // not UTF-8, a lone surrogate
		encodeBoth(t, &planRecord{S: s})
		encodeBoth(t, &planSparse{S: s})
	}
}

// TestEncodeAllUsesPlan: a stream of flat records sends, one or many at a
// time, the bytes the codec writes; a record with a string that is not
// UTF-8 fails with the codec's error.
func TestEncodeAllUsesPlan(t *testing.T) {
	cat := NewCatalog(nil, rdb.NewKeySpace("test", "app"), Defaults{}, nil)
	s, err := Declare[planRecord](cat, "plan", Spec{KeyField: "s"})
	if err != nil {
		t.Fatal(err)
	}
	recs := []planRecord{{S: "a", I: 1}, {S: "b", F64: 2.5, U8: 200}, {S: strings.Repeat("c", 3000), I64: -70000}}
	for _, n := range []int{1, len(recs)} {
		entries, err := s.EncodeAll(n, func(i int) (*planRecord, Headers) { return &recs[i], nil })
		if err != nil {
			t.Fatal(err)
		}
		for i, e := range entries {
			want, _ := MsgPack.Marshal(&recs[i])
			if string(e.Data) != string(want) || e.Codec != "msgpack" || string(e.Key) != recs[i].S {
				t.Fatalf("record %d of %d: entry %+v, want data % x", i, n, e, want)
			}
		}
	}
	bad := []planRecord{{S: "a"}, {S: "b", Skip: "\xff"}, {S: "k\xff"}}
	_, err = s.EncodeAll(len(bad), func(i int) (*planRecord, Headers) { return &bad[i], nil })
	_, libErr := MsgPack.Marshal(&bad[2])
	if err == nil || !errors.Is(err, ErrEncode) || !strings.Contains(err.Error(), "record 2: "+libErr.Error()) {
		t.Fatalf("a record that is not UTF-8: %v (the codec: %v)", err, libErr)
	}
}

// BenchmarkEncode encodes a small record with the plan and with the
// library: go test -run '^$' -bench 'Encode$' ./internal/core
func BenchmarkEncode(b *testing.B) {
	rec := benchOrder{ID: 123456, Customer: "customer-17", Amount: 30.25, Note: strings.Repeat("x", 64)}
	plan := newMsgpackPlan[benchOrder]()
	b.Run("plan", func(b *testing.B) {
		b.ReportAllocs()
		pb := planBatch{plan: plan, chunk: batchChunk(10000)}
		for b.Loop() {
			if _, ok := pb.encode(unsafe.Pointer(&rec), 10000); !ok {
				b.Fatal("not encoded")
			}
		}
	})
	b.Run("library", func(b *testing.B) {
		b.ReportAllocs()
		mb := MsgPack.(batchCodec).newBatch(10000)
		defer mb.close()
		for b.Loop() {
			if _, err := mb.marshal(&rec); err != nil {
				b.Fatal(err)
			}
		}
	})
}

type benchOrder struct {
	ID       int64   `msgpack:"id"`
	Customer string  `msgpack:"customer"`
	Amount   float64 `msgpack:"amount"`
	Note     string  `msgpack:"note"`
}

// selfMarshaled encodes itself as a msgpack string.
type selfMarshaled struct{ A int }

func (s selfMarshaled) MarshalMsgpack() ([]byte, error) {
	return msgpack.Marshal(fmt.Sprint(s.A))
}

// selfDecoded decodes itself (through its pointer).
type selfDecoded struct{ A int }

func (s *selfDecoded) DecodeMsgpack(d *msgpack.Decoder) error {
	n, err := d.DecodeInt()
	s.A = n + 1
	return err
}

// textual is a record that is text.
type textual struct{ A int }

func (t textual) MarshalText() ([]byte, error) { return []byte(fmt.Sprint(t.A)), nil }

// extended gets a msgpack extension registered for it.
type extended struct{ A int }

// TestMsgpackPlanLeavesOwnCoding: a record type that encodes or decodes
// itself, or has a registered extension, is coded by the library, as
// before.
func TestMsgpackPlanLeavesOwnCoding(t *testing.T) {
	msgpack.RegisterExtEncoder(77, extended{}, func(e *msgpack.Encoder, v reflect.Value) ([]byte, error) {
		return []byte{byte(v.Field(0).Int())}, nil
	})
	defer msgpack.UnregisterExt(77)
	for name, plan := range map[string]*msgpackPlan{
		"MarshalMsgpack":       newMsgpackPlan[selfMarshaled](),
		"DecodeMsgpack":        newMsgpackPlan[selfDecoded](),
		"MarshalText":          newMsgpackPlan[textual](),
		"registered extension": newMsgpackPlan[extended](),
	} {
		if plan != nil {
			t.Errorf("%s: a plan", name)
		}
	}
	cat := NewCatalog(nil, rdb.NewKeySpace("test", "app"), Defaults{}, nil)
	s, err := Declare[selfMarshaled](cat, "self", Spec{KeyFunc: func(*selfMarshaled) ([]byte, error) { return []byte("k"), nil }})
	if err != nil {
		t.Fatal(err)
	}
	entries, err := s.EncodeAll(2, func(int) (*selfMarshaled, Headers) { return &selfMarshaled{A: 7}, nil })
	if err != nil {
		t.Fatal(err)
	}
	if want, _ := msgpack.Marshal("7"); string(entries[1].Data) != string(want) {
		t.Fatalf("encoded % x, want its own % x", entries[1].Data, want)
	}
}
