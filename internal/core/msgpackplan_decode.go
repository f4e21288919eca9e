package core

import (
	"encoding/binary"
	"math"
	"reflect"
	"unsafe"
)

// Decoding with a plan: an entry's bytes read straight into the struct,
// or false for anything the library would decode otherwise.

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
