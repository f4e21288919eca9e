package core

import (
	"bytes"
	"fmt"
	"reflect"
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
