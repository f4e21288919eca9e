package core

import (
	"encoding"
	"encoding/binary"
	"math"
	"reflect"
	"strings"
	"unicode/utf8"
	"unsafe"

	"github.com/vmihailenco/msgpack/v5"
)

// A msgpackPlan encodes and decodes msgpack records of one flat struct type
// without reflection: the field of each name and where it lives in the
// struct are worked out once, when the stream is declared, and a record is
// then written field by field into the entry's bytes, or read straight from
// them into the struct. The msgpack library looks the struct's fields up in
// a synchronized cache and gets or sets each through reflect for every
// record; on a worker draining a backlog decoding was most of the time a
// consumer spent per event, and encoding most of a send's own work.
//
// A plan encodes a record into exactly the bytes the msgpack codec writes
// for it (compact integers, omitempty fields left out; TestMsgpackPlanEncodes
// compares them), and leaves a record with a string that is not UTF-8 to
// the codec, which refuses it.
//
// A plan covers what leat's own encoder writes for a struct whose fields
// are all of predeclared scalar types (string, bool, the integer and float
// types): a map of field names to values. Anything else in an entry (an
// unknown field, an array, a value of a type the field's decoder would
// convert in a way not mirrored here, trailing bytes) makes decode report
// false, and the caller decodes the entry with the library instead, so
// every entry decodes exactly as msgpack.Unmarshal decodes it, errors
// included (TestMsgpackPlanMatchesLibrary, FuzzMsgpackPlan).
type msgpackPlan struct {
	list   []planField    // in the struct's order, which the encoder writes them in
	fields map[string]int // index in list, by name
}

type planField struct {
	name      string
	header    []byte // the name as the encoder writes it: a fixstr
	off       uintptr
	kind      reflect.Kind
	omitEmpty bool
}

// scalarTypes are the field types a plan decodes: predeclared types only,
// so that no method (msgpack.CustomDecoder, encoding.TextUnmarshaler...)
// and no registered extension of a named type can change their decoding.
var scalarTypes = map[reflect.Type]bool{}

func init() {
	for _, v := range []any{"", false, int(0), int8(0), int16(0), int32(0), int64(0),
		uint(0), uint8(0), uint16(0), uint32(0), uint64(0), float32(0), float64(0)} {
		scalarTypes[reflect.TypeOf(v)] = true
	}
}

// ownCoding are the interfaces through which a type encodes or decodes
// itself with the msgpack library: a record type with any of them (on the
// type or its pointer) has no plan.
var ownCoding = []reflect.Type{
	reflect.TypeFor[msgpack.CustomEncoder](), reflect.TypeFor[msgpack.CustomDecoder](),
	reflect.TypeFor[msgpack.Marshaler](), reflect.TypeFor[msgpack.Unmarshaler](),
	reflect.TypeFor[encoding.BinaryMarshaler](), reflect.TypeFor[encoding.BinaryUnmarshaler](),
	reflect.TypeFor[encoding.TextMarshaler](), reflect.TypeFor[encoding.TextUnmarshaler](),
}

// newMsgpackPlan returns the plan of T's msgpack coding, or nil when T is
// not a struct that a plan encodes and decodes as the library does. Field
// names follow the msgpack codec: the `msgpack` tag, else the `json` tag,
// else the Go name. A type that codes itself (ownCoding), or for which an
// extension was registered with the library by the time the stream is
// declared (msgpack.RegisterExt: the plan's bytes for a sample record then
// differ from the library's), has none.
func newMsgpackPlan[T any]() *msgpackPlan {
	t := reflect.TypeFor[T]()
	if t.Kind() != reflect.Struct {
		return nil
	}
	for _, i := range ownCoding {
		if t.Implements(i) || reflect.PointerTo(t).Implements(i) {
			return nil
		}
	}
	p := structPlan(t)
	if p == nil || !agrees[T](p) {
		return nil
	}
	return p
}

// agrees reports whether p encodes a record of T with every field zero,
// and one with every field set, as the library does, and decodes the
// library's bytes back.
func agrees[T any](p *msgpackPlan) bool {
	var zero, full T
	for i := range p.list {
		f := &p.list[i]
		ptr := unsafe.Add(unsafe.Pointer(&full), f.off)
		switch f.kind {
		case reflect.String:
			*(*string)(ptr) = "x"
		case reflect.Bool:
			*(*bool)(ptr) = true
		default:
			setNumber(f.kind, ptr, 1)
		}
	}
	for _, v := range []*T{&zero, &full} {
		lib, err := MsgPack.Marshal(v)
		if err != nil {
			return false
		}
		if string(p.appendEncoded(nil, unsafe.Pointer(v))) != string(lib) {
			return false
		}
		var back T
		if !p.decode(lib, unsafe.Pointer(&back)) || string(p.appendEncoded(nil, unsafe.Pointer(&back))) != string(lib) {
			return false
		}
	}
	return true
}

// structPlan returns the plan of struct type t's fields, or nil when one
// is of a kind or has a tag that a plan does not mirror.
func structPlan(t reflect.Type) *msgpackPlan {
	p := &msgpackPlan{fields: make(map[string]int, t.NumField())}
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("msgpack")
		if tag == "" {
			tag = f.Tag.Get("json")
		}
		name, opts, _ := strings.Cut(tag, ",")
		if name == "-" {
			continue // skipped by the library too, whatever its options
		}
		if f.Name == "_msgpack" || f.Anonymous {
			return nil // struct options, inlined structs
		}
		if !f.IsExported() {
			continue
		}
		omitEmpty := false
		for _, o := range strings.Split(opts, ",") {
			switch o {
			case "omitempty":
				omitEmpty = true
			case "", "string": // a json option the library ignores
			default:
				return nil
			}
		}
		if !plainName(name) || !scalarTypes[f.Type] {
			return nil
		}
		if name == "" {
			name = f.Name
		}
		if len(name) >= 32 {
			return nil // not a fixstr
		}
		if _, dup := p.fields[name]; dup {
			return nil
		}
		p.fields[name] = len(p.list)
		p.list = append(p.list, planField{
			name: name, header: append([]byte{0xa0 | byte(len(name))}, name...),
			off: f.Offset, kind: f.Type.Kind(), omitEmpty: omitEmpty,
		})
	}
	return p
}

// plainName reports whether a tag's name is one the library's tag parser
// takes as it is (no quotes, escapes or separators).
func plainName(name string) bool {
	for _, r := range name {
		if !(r == '_' || r == '-' || r == '.' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z') {
			return false
		}
	}
	return true
}

// decode decodes b into the struct at v (a *T of the plan's type). It
// returns false, having possibly written some fields, when b holds
// anything it does not decode as the library would.
func (p *msgpackPlan) decode(b []byte, v unsafe.Pointer) bool {
	if len(b) == 0 {
		return false
	}
	var n, i int
	switch c := b[0]; {
	case c >= 0x80 && c <= 0x8f: // fixmap
		n, i = int(c&0x0f), 1
	case c == 0xde && len(b) >= 3: // map 16
		n, i = int(binary.BigEndian.Uint16(b[1:])), 3
	case c == 0xdf && len(b) >= 5: // map 32
		n, i = int(binary.BigEndian.Uint32(b[1:])), 5
	default:
		return false // nil, an array, not a map
	}
	next := 0 // the field expected next: the one after the last
	for range n {
		from, to, ok := readStr(b, i)
		if !ok {
			return false
		}
		k := next
		if k >= len(p.list) || p.list[k].name != string(b[from:to]) {
			if k, ok = p.fields[string(b[from:to])]; !ok {
				return false // the library skips unknown fields: leave it to it
			}
		}
		next = k + 1
		f := &p.list[k]
		if i, ok = f.decode(b, to, unsafe.Add(v, f.off)); !ok {
			return false
		}
	}
	return i == len(b)
}

// decode decodes the value at b[i:] into the field at ptr, as the
// library's decoder of the field's kind does, and returns where the value
// ends.
func (f *planField) decode(b []byte, i int, ptr unsafe.Pointer) (int, bool) {
	if i >= len(b) {
		return 0, false
	}
	if b[i] == 0xc0 { // nil: every scalar decoder sets the zero value
		switch f.kind {
		case reflect.String:
			*(*string)(ptr) = ""
		case reflect.Bool:
			*(*bool)(ptr) = false
		default:
			setNumber(f.kind, ptr, 0)
		}
		return i + 1, true
	}
	switch f.kind {
	case reflect.String:
		from, to, ok := readStr(b, i)
		if !ok {
			return 0, false
		}
		if to > from {
			*(*string)(ptr) = string(b[from:to])
		} else {
			*(*string)(ptr) = ""
		}
		return to, true
	case reflect.Bool:
		switch b[i] {
		case 0xc2:
			*(*bool)(ptr) = false
		case 0xc3:
			*(*bool)(ptr) = true
		default:
			return 0, false
		}
		return i + 1, true
	case reflect.Float32:
		if b[i] == 0xca && len(b) >= i+5 {
			*(*float32)(ptr) = math.Float32frombits(binary.BigEndian.Uint32(b[i+1:]))
			return i + 5, true
		}
	case reflect.Float64:
		switch {
		case b[i] == 0xcb && len(b) >= i+9:
			*(*float64)(ptr) = math.Float64frombits(binary.BigEndian.Uint64(b[i+1:]))
			return i + 9, true
		case b[i] == 0xca && len(b) >= i+5:
			*(*float64)(ptr) = float64(math.Float32frombits(binary.BigEndian.Uint32(b[i+1:])))
			return i + 5, true
		}
	}
	bits, next, ok := readInt(b, i)
	if !ok {
		return 0, false
	}
	setNumber(f.kind, ptr, bits)
	return next, true
}

// setNumber stores an integer read by readInt (its 64 bits) in the field
// of kind k at ptr: truncated to the field's size as reflect.Value.SetInt
// and SetUint do, or converted from int64 to a float as the library's
// float decoders do.
func setNumber(k reflect.Kind, ptr unsafe.Pointer, bits uint64) {
	switch k {
	case reflect.Int:
		*(*int)(ptr) = int(int64(bits))
	case reflect.Int8:
		*(*int8)(ptr) = int8(bits)
	case reflect.Int16:
		*(*int16)(ptr) = int16(bits)
	case reflect.Int32:
		*(*int32)(ptr) = int32(bits)
	case reflect.Int64:
		*(*int64)(ptr) = int64(bits)
	case reflect.Uint:
		*(*uint)(ptr) = uint(bits)
	case reflect.Uint8:
		*(*uint8)(ptr) = uint8(bits)
	case reflect.Uint16:
		*(*uint16)(ptr) = uint16(bits)
	case reflect.Uint32:
		*(*uint32)(ptr) = uint32(bits)
	case reflect.Uint64:
		*(*uint64)(ptr) = bits
	case reflect.Float32:
		*(*float32)(ptr) = float32(int64(bits))
	case reflect.Float64:
		*(*float64)(ptr) = float64(int64(bits))
	}
}

// readInt reads an integer of any msgpack integer format at b[i:] as the
// library's int and uint do: signed formats sign-extended, unsigned ones
// zero-extended, to 64 bits.
func readInt(b []byte, i int) (bits uint64, next int, ok bool) {
	c := b[i]
	if c <= 0x7f || c >= 0xe0 { // positive and negative fixint
		return uint64(int64(int8(c))), i + 1, true
	}
	var size int
	switch c {
	case 0xcc, 0xd0:
		size = 1
	case 0xcd, 0xd1:
		size = 2
	case 0xce, 0xd2:
		size = 4
	case 0xcf, 0xd3:
		size = 8
	default:
		return 0, 0, false
	}
	if len(b) < i+1+size {
		return 0, 0, false
	}
	d := b[i+1:]
	switch c {
	case 0xcc:
		bits = uint64(d[0])
	case 0xd0:
		bits = uint64(int64(int8(d[0])))
	case 0xcd:
		bits = uint64(binary.BigEndian.Uint16(d))
	case 0xd1:
		bits = uint64(int64(int16(binary.BigEndian.Uint16(d))))
	case 0xce:
		bits = uint64(binary.BigEndian.Uint32(d))
	case 0xd2:
		bits = uint64(int64(int32(binary.BigEndian.Uint32(d))))
	default:
		bits = binary.BigEndian.Uint64(d)
	}
	return bits, i + 1 + size, true
}

// readStr reads the header of a str or bin value at b[i:] and returns
// where its bytes are.
func readStr(b []byte, i int) (from, to int, ok bool) {
	if i >= len(b) {
		return 0, 0, false
	}
	c := b[i]
	var n int
	switch {
	case c >= 0xa0 && c <= 0xbf: // fixstr
		n, from = int(c&0x1f), i+1
	case (c == 0xd9 || c == 0xc4) && len(b) >= i+2:
		n, from = int(b[i+1]), i+2
	case (c == 0xda || c == 0xc5) && len(b) >= i+3:
		n, from = int(binary.BigEndian.Uint16(b[i+1:])), i+3
	case (c == 0xdb || c == 0xc6) && len(b) >= i+5:
		n, from = int(binary.BigEndian.Uint32(b[i+1:])), i+5
	default:
		return 0, 0, false
	}
	if n > len(b)-from {
		return 0, 0, false
	}
	return from, from + n, true
}

// size returns the size of the record at v encoded, or false when a
// string of it is not UTF-8.
func (p *msgpackPlan) size(v unsafe.Pointer) (int, bool) {
	n, fields := 0, 0
	for i := range p.list {
		f := &p.list[i]
		ptr := unsafe.Add(v, f.off)
		if f.omitEmpty && f.empty(ptr) {
			continue
		}
		fields++
		n += len(f.header)
		switch f.kind {
		case reflect.String:
			s := *(*string)(ptr)
			if !utf8.ValidString(s) {
				return 0, false
			}
			n += strHeaderLen(len(s)) + len(s)
		case reflect.Bool:
			n++
		case reflect.Float32:
			n += 5
		case reflect.Float64:
			n += 9
		default:
			n += 9 // at most
		}
	}
	return n + mapHeaderLen(fields), true
}

// appendEncoded appends the record at v encoded as the msgpack codec
// encodes it. Its strings must be UTF-8: size says so.
func (p *msgpackPlan) appendEncoded(dst []byte, v unsafe.Pointer) []byte {
	fields := 0
	for i := range p.list {
		if f := &p.list[i]; !f.omitEmpty || !f.empty(unsafe.Add(v, f.off)) {
			fields++
		}
	}
	switch {
	case fields < 16:
		dst = append(dst, 0x80|byte(fields))
	default:
		dst = append(dst, 0xde, byte(fields>>8), byte(fields))
	}
	for i := range p.list {
		f := &p.list[i]
		ptr := unsafe.Add(v, f.off)
		if f.omitEmpty && f.empty(ptr) {
			continue
		}
		dst = append(dst, f.header...)
		switch f.kind {
		case reflect.String:
			s := *(*string)(ptr)
			dst = appendStrHeader(dst, len(s))
			dst = append(dst, s...)
		case reflect.Bool:
			if *(*bool)(ptr) {
				dst = append(dst, 0xc3)
			} else {
				dst = append(dst, 0xc2)
			}
		case reflect.Float32:
			dst = append(dst, 0xca)
			dst = binary.BigEndian.AppendUint32(dst, math.Float32bits(*(*float32)(ptr)))
		case reflect.Float64:
			dst = append(dst, 0xcb)
			dst = binary.BigEndian.AppendUint64(dst, math.Float64bits(*(*float64)(ptr)))
		case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
			dst = appendInt(dst, loadInt(f.kind, ptr))
		default:
			dst = appendUint(dst, loadUint(f.kind, ptr))
		}
	}
	return dst
}

// empty reports whether the field at ptr holds a value omitempty leaves
// out: the library's test (a float equal to 0, so -0 too).
func (f *planField) empty(ptr unsafe.Pointer) bool {
	switch f.kind {
	case reflect.String:
		return len(*(*string)(ptr)) == 0
	case reflect.Bool:
		return !*(*bool)(ptr)
	case reflect.Float32:
		return *(*float32)(ptr) == 0
	case reflect.Float64:
		return *(*float64)(ptr) == 0
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return loadInt(f.kind, ptr) == 0
	default:
		return loadUint(f.kind, ptr) == 0
	}
}

func loadInt(k reflect.Kind, ptr unsafe.Pointer) int64 {
	switch k {
	case reflect.Int8:
		return int64(*(*int8)(ptr))
	case reflect.Int16:
		return int64(*(*int16)(ptr))
	case reflect.Int32:
		return int64(*(*int32)(ptr))
	case reflect.Int64:
		return *(*int64)(ptr)
	default:
		return int64(*(*int)(ptr))
	}
}

func loadUint(k reflect.Kind, ptr unsafe.Pointer) uint64 {
	switch k {
	case reflect.Uint8:
		return uint64(*(*uint8)(ptr))
	case reflect.Uint16:
		return uint64(*(*uint16)(ptr))
	case reflect.Uint32:
		return uint64(*(*uint32)(ptr))
	case reflect.Uint64:
		return *(*uint64)(ptr)
	default:
		return uint64(*(*uint)(ptr))
	}
}

// appendUint appends n in the smallest format, as the library's EncodeUint
// does (compact integers).
func appendUint(dst []byte, n uint64) []byte {
	switch {
	case n <= math.MaxInt8:
		return append(dst, byte(n))
	case n <= math.MaxUint8:
		return append(dst, 0xcc, byte(n))
	case n <= math.MaxUint16:
		return binary.BigEndian.AppendUint16(append(dst, 0xcd), uint16(n))
	case n <= math.MaxUint32:
		return binary.BigEndian.AppendUint32(append(dst, 0xce), uint32(n))
	}
	return binary.BigEndian.AppendUint64(append(dst, 0xcf), n)
}

// appendInt appends n in the smallest format, as the library's EncodeInt
// does.
func appendInt(dst []byte, n int64) []byte {
	switch {
	case n >= 0:
		return appendUint(dst, uint64(n))
	case n >= -32:
		return append(dst, byte(n))
	case n >= math.MinInt8:
		return append(dst, 0xd0, byte(n))
	case n >= math.MinInt16:
		return binary.BigEndian.AppendUint16(append(dst, 0xd1), uint16(n))
	case n >= math.MinInt32:
		return binary.BigEndian.AppendUint32(append(dst, 0xd2), uint32(n))
	}
	return binary.BigEndian.AppendUint64(append(dst, 0xd3), uint64(n))
}

func appendStrHeader(dst []byte, n int) []byte {
	switch {
	case n < 32:
		return append(dst, 0xa0|byte(n))
	case n < 256:
		return append(dst, 0xd9, byte(n))
	case n <= math.MaxUint16:
		return binary.BigEndian.AppendUint16(append(dst, 0xda), uint16(n))
	}
	return binary.BigEndian.AppendUint32(append(dst, 0xdb), uint32(n))
}

func strHeaderLen(n int) int {
	switch {
	case n < 32:
		return 1
	case n < 256:
		return 2
	case n <= math.MaxUint16:
		return 3
	}
	return 5
}

func mapHeaderLen(n int) int {
	if n < 16 {
		return 1
	}
	return 3
}

// planBatch encodes the records of one batch with a plan into shared
// buffers, as msgpackBatch does: each record's bytes are a
// capacity-limited slice of a buffer that is never grown, a new one
// started when less than a quarter is left (or the record does not fit).
type planBatch struct {
	plan  *msgpackPlan
	chunk int
	buf   []byte
}

// encode encodes the record at v, of a batch of n records; a batch of one
// gets a slice of its own size. It returns false when a string of the
// record is not UTF-8.
func (b *planBatch) encode(v unsafe.Pointer, n int) ([]byte, bool) {
	size, ok := b.plan.size(v)
	if !ok {
		return nil, false
	}
	if n == 1 || size > b.chunk/4 {
		return b.plan.appendEncoded(make([]byte, 0, size), v), true
	}
	if cap(b.buf)-len(b.buf) < max(size, b.chunk/4) {
		b.buf = make([]byte, 0, b.chunk) // the records so far keep the old one
	}
	start := len(b.buf)
	b.buf = b.plan.appendEncoded(b.buf, v)
	return b.buf[start:len(b.buf):len(b.buf)], true
}
