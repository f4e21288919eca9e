package schema

import (
	"encoding"
	"encoding/json"
	"math"
	"reflect"
	"strconv"
	"time"
)

// A StructField is one encoded field of a struct type.
type StructField struct {
	Name string
	Type reflect.Type
	// Quoted is a field whose number or boolean is written in a JSON
	// string (encoding/json's ",string" option): checked as any value.
	Quoted bool
}

// Options say how a type is read.
type Options struct {
	// Decoder is DecoderStream or DecoderJSON.
	Decoder string
	// Fields lists the encoded fields of a struct type (embedded structs'
	// promoted); nil: as encoding/json names them (JSONFields).
	Fields func(reflect.Type) []StructField
	// Required names the top-level fields a record must hold, not null
	// (a stream's key field).
	Required []string
}

var (
	jsonUnmarshaler = reflect.TypeFor[json.Unmarshaler]()
	textUnmarshaler = reflect.TypeFor[encoding.TextUnmarshaler]()
	timeType        = reflect.TypeFor[time.Time]()
	rawMessage      = reflect.TypeFor[json.RawMessage]()
)

// Of returns the schema of the JSON t decodes under o, or nil when t takes
// any JSON (an empty interface, json.RawMessage, map[string]any): there is
// nothing to check.
func Of(t reflect.Type, o Options) *Schema {
	if o.Fields == nil {
		o.Fields = JSONFields
	}
	b := builder{o: o, open: map[reflect.Type]bool{}}
	root := b.typeOf(t, 0)
	if root.Kind == Any || (root.Kind == Map && root.Key == nil && root.Elem.Kind == Any) {
		return nil
	}
	return &Schema{Version: Version, Decoder: o.Decoder, Type: root, Required: o.Required}
}

type builder struct {
	o    Options
	open map[reflect.Type]bool // struct types being described (recursion)
}

// typeOf describes t, depth levels down.
func (b *builder) typeOf(t reflect.Type, depth int) *Type {
	if depth > maxDepth-2 {
		return &Type{Kind: Any}
	}
	if t == timeType || reflect.PointerTo(t) == reflect.PointerTo(timeType) {
		return &Type{Kind: String, Format: FormatDateTime}
	}
	if t == rawMessage {
		return &Type{Kind: Any}
	}
	if t.Kind() != reflect.Pointer && t.Kind() != reflect.Interface {
		pt := reflect.PointerTo(t)
		switch {
		case pt.Implements(jsonUnmarshaler):
			return &Type{Kind: Any} // it decodes itself
		case pt.Implements(textUnmarshaler):
			return &Type{Kind: String}
		}
	}
	switch t.Kind() {
	case reflect.Pointer:
		return b.typeOf(t.Elem(), depth)
	case reflect.Interface:
		if t.NumMethod() == 0 {
			return &Type{Kind: Any}
		}
		return &Type{Kind: None}
	case reflect.Bool:
		return &Type{Kind: Boolean}
	case reflect.String:
		return &Type{Kind: String}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return integerOf(t)
	case reflect.Float32, reflect.Float64:
		return &Type{Kind: Number, Bits: t.Bits()}
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Uint8 && !reflect.PointerTo(t.Elem()).Implements(jsonUnmarshaler) &&
			!reflect.PointerTo(t.Elem()).Implements(textUnmarshaler) {
			return &Type{Kind: Bytes}
		}
		return &Type{Kind: Array, Elem: b.typeOf(t.Elem(), depth+1)}
	case reflect.Array:
		a := &Type{Kind: Array, Elem: b.typeOf(t.Elem(), depth+1)}
		if b.o.Decoder == DecoderStream { // encoding/json drops extra elements and zeroes missing ones
			n := t.Len()
			a.Len = &n
		}
		return a
	case reflect.Map:
		m := &Type{Kind: Map, Elem: b.typeOf(t.Elem(), depth+1)}
		k := t.Key()
		switch {
		case k.Kind() == reflect.String:
		case b.o.Decoder == DecoderJSON && reflect.PointerTo(k).Implements(textUnmarshaler):
		case k.Kind() >= reflect.Int && k.Kind() <= reflect.Uint64:
			m.Key = integerOf(k)
		default:
			return &Type{Kind: None}
		}
		return m
	case reflect.Struct:
		if b.open[t] {
			return &Type{Kind: Any} // met again inside itself: checked to here
		}
		b.open[t] = true
		defer delete(b.open, t)
		fs := b.o.Fields(t)
		obj := &Type{Kind: Object, Fields: make([]Field, 0, len(fs))}
		for _, f := range fs {
			ft := &Type{Kind: Any}
			if !f.Quoted {
				ft = b.typeOf(f.Type, depth+1)
			}
			obj.Fields = append(obj.Fields, Field{Name: f.Name, Type: ft})
		}
		return obj
	}
	return &Type{Kind: None}
}

// integerOf describes integer type t with its range.
func integerOf(t reflect.Type) *Type {
	bits := t.Bits()
	if t.Kind() >= reflect.Uint && t.Kind() <= reflect.Uintptr {
		return &Type{Kind: Integer, Min: "0", Max: strconv.FormatUint(uint64(math.MaxUint64)>>(64-bits), 10)}
	}
	return &Type{Kind: Integer, Min: strconv.FormatInt(-(int64(1) << (bits - 1)), 10),
		Max: strconv.FormatInt(int64(1)<<(bits-1)-1, 10)}
}
