package core

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"unicode/utf8"
)

// CheckMarshaled returns an error when encoding/json, encoding v into b
// (json.Marshal), replaced bytes of a string of v that are not UTF-8 with
// U+FFFD: what a reader decodes would not be what was sent. The encoder
// writes such a replacement as the escape \ufffd, and a U+FFFD of valid
// text as the character itself, so v is searched only when b holds that
// escape (raw JSON may hold one of its own).
func CheckMarshaled(b []byte, v any) error {
	if !hasReplacementEscape(b) {
		return nil
	}
	if s, ok := invalidString(reflect.ValueOf(v), 0); ok {
		return fmt.Errorf("string %.40q is not valid UTF-8 (JSON would replace its bad bytes with U+FFFD)", s)
	}
	return nil
}

// hasReplacementEscape reports whether b holds the escape \ufffd (a
// backslash that is not itself escaped, then ufffd in any case).
func hasReplacementEscape(b []byte) bool {
	for i := 0; ; {
		j := bytes.Index(b[i:], []byte(`\u`))
		if j < 0 {
			return false
		}
		at := i + j
		slashes := 0
		for k := at - 1; k >= 0 && b[k] == '\\'; k-- {
			slashes++
		}
		if slashes%2 == 0 && at+6 <= len(b) && bytes.EqualFold(b[at+2:at+6], []byte("fffd")) {
			return true
		}
		i = at + 2
	}
}

// invalidString returns the first string of v (a field, element, map key or
// value, however deep) that is not valid UTF-8. Byte slices are not text
// (encoding/json writes them in base64).
func invalidString(v reflect.Value, depth int) (string, bool) {
	if !v.IsValid() || depth > 100 {
		return "", false
	}
	switch v.Kind() {
	case reflect.String:
		if s := v.String(); !utf8.ValidString(s) {
			return s, true
		}
	case reflect.Pointer, reflect.Interface:
		if !v.IsNil() {
			return invalidString(v.Elem(), depth+1)
		}
	case reflect.Struct:
		for i := range v.NumField() {
			if !v.Type().Field(i).IsExported() {
				continue // not encoded
			}
			if s, ok := invalidString(v.Field(i), depth+1); ok {
				return s, true
			}
		}
	case reflect.Map:
		iter := v.MapRange()
		for iter.Next() {
			if s, ok := invalidString(iter.Key(), depth+1); ok {
				return s, true
			}
			if s, ok := invalidString(iter.Value(), depth+1); ok {
				return s, true
			}
		}
	case reflect.Slice, reflect.Array:
		if v.Type().Elem().Kind() == reflect.Uint8 {
			return "", false
		}
		for i := range v.Len() {
			if s, ok := invalidString(v.Index(i), depth+1); ok {
				return s, true
			}
		}
	}
	return "", false
}

// duplicateName returns the path of the first member name that an object
// of the JSON text b holds twice ("a", "items[2].sku"), and whether there
// is one. Decoders keep one of the two values (encoding/json and most others
// the last) or refuse the text (strict ones, such as encoding/json/v2):
// either way what a reader sees is not all that was sent. b is valid JSON;
// on other input the result is of no use but harmless. It allocates nothing
// unless a name holds an escape or an object has many members.
func duplicateName(b []byte) (string, bool) {
	if bytes.IndexByte(b, '{') < 0 {
		return "", false
	}
	type frame struct {
		obj   bool
		key   bool   // an object's next string is a member name
		name  []byte // an object's last member name
		index int    // an array's current element
		start int    // where the frame's names begin in names
		set   map[string]bool
	}
	var stackBuf [8]frame
	var namesBuf [32][]byte
	stack, names := stackBuf[:0], namesBuf[:0] // names: the open objects' member names, in order
	path := func(last []byte) string {
		var p strings.Builder
		for k := range stack[:len(stack)-1] {
			f := &stack[k]
			if f.obj {
				if p.Len() > 0 {
					p.WriteByte('.')
				}
				p.Write(f.name)
			} else {
				fmt.Fprintf(&p, "[%d]", f.index)
			}
		}
		if p.Len() > 0 {
			p.WriteByte('.')
		}
		p.Write(last)
		return p.String()
	}
	for i := 0; i < len(b); i++ {
		switch b[i] {
		case '{':
			stack = append(stack, frame{obj: true, key: true, start: len(names)})
		case '[':
			stack = append(stack, frame{start: len(names)})
		case '}', ']':
			if len(stack) > 0 {
				names = names[:stack[len(stack)-1].start]
				stack = stack[:len(stack)-1]
			}
		case ',':
			if len(stack) > 0 {
				f := &stack[len(stack)-1]
				f.key = f.obj
				f.index++
			}
		case '"':
			end := i + 1
			for {
				q := bytes.IndexByte(b[end:], '"')
				if q < 0 {
					return "", false
				}
				end += q
				slashes := 0 // before the quote: an odd count escapes it
				for k := end - 1; k > i && b[k] == '\\'; k-- {
					slashes++
				}
				if slashes%2 == 0 {
					break
				}
				end++
			}
			if len(stack) > 0 && stack[len(stack)-1].key {
				f := &stack[len(stack)-1]
				name := b[i+1 : end]
				if bytes.IndexByte(name, '\\') >= 0 {
					var s string
					if err := json.Unmarshal(b[i:end+1], &s); err != nil {
						return "", false
					}
					name = []byte(s)
				}
				f.key, f.name = false, name
				if f.set == nil && len(names)-f.start < 16 {
					for _, n := range names[f.start:] {
						if bytes.Equal(n, name) {
							return path(name), true
						}
					}
					names = append(names, name)
				} else {
					if f.set == nil {
						f.set = make(map[string]bool, 2*(len(names)-f.start))
						for _, n := range names[f.start:] {
							f.set[string(n)] = true
						}
						names = names[:f.start] // the set holds them now
					}
					if f.set[string(name)] {
						return path(name), true
					}
					f.set[string(name)] = true
				}
			}
			i = end
		}
	}
	return "", false
}
