package core

import (
	"encoding/binary"
	"math"
	"reflect"
	"unicode/utf8"
	"unsafe"
)

// Encoding with a plan: a record written field by field into exactly the
// bytes the msgpack codec writes for it.

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
