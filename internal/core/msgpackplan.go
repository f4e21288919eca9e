package core

import (
	"encoding"
	"reflect"
	"strings"
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
