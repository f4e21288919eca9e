package core

import (
	"fmt"
	"reflect"
	"strconv"
	"strings"
)

// fieldKey returns a function reading the partition key from the field of T
// whose encoded name, under the struct tags of the stream's codec, is name.
func fieldKey[T any](name string, tags []string) (func(*T) ([]byte, error), error) {
	t := reflect.TypeFor[T]()
	if t.Kind() == reflect.Map {
		if t.Key().Kind() != reflect.String {
			return nil, fmt.Errorf("key field %q: records of type %s need string map keys", name, t)
		}
		mk := reflect.ValueOf(name).Convert(t.Key())
		return func(r *T) ([]byte, error) {
			v := reflect.ValueOf(r).Elem().MapIndex(mk)
			if !v.IsValid() {
				return nil, fmt.Errorf("key field %q is missing", name)
			}
			switch x := v.Interface(); x.(type) {
			case nil:
				return nil, fmt.Errorf("key field %q is null", name)
			case float32, float64:
				return nil, fmt.Errorf("key field %q holds a number with a fraction or an exponent: use a string or an integer", name)
			case map[string]any, []any:
				return nil, fmt.Errorf("key field %q holds an object or an array: use a string, an integer or a bool", name)
			}
			k, err := KeyBytes(v.Interface())
			if err != nil {
				return nil, fmt.Errorf("key field %q: %w", name, err)
			}
			return k, nil
		}, nil
	}
	ptr := false
	st := t
	if st.Kind() == reflect.Pointer {
		ptr, st = true, st.Elem()
	}
	if st.Kind() != reflect.Struct {
		return nil, fmt.Errorf("key field %q: records of type %s have no fields (use KeyFunc)", name, t)
	}
	f, ok := fieldsOf(st, tags).lookup(name)
	if !ok {
		return nil, fmt.Errorf("key field %q: type %s has no field encoded with that name (fields are named by %s)",
			name, t, describeTags(tags))
	}
	idx, ft := f.index, f.typ
	switch ft.Kind() {
	case reflect.String, reflect.Bool,
		reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
	default:
		if !(ft.Kind() == reflect.Slice && ft.Elem().Kind() == reflect.Uint8) {
			return nil, fmt.Errorf("key field %q of type %s: use a string, an integer or a bool", name, ft)
		}
	}
	// A field whose type has a String method is keyed by it (KeyBytes); the
	// others are formatted straight from the field, as KeyBytes would,
	// without boxing it.
	boxed := ft.Implements(stringer)
	return func(r *T) ([]byte, error) {
		v := reflect.ValueOf(r).Elem()
		if ptr {
			if v.IsNil() {
				return nil, fmt.Errorf("record is a nil %s", t)
			}
			v = v.Elem()
		}
		f, err := v.FieldByIndexErr(idx)
		if err != nil {
			return nil, fmt.Errorf("key field %q: %w", name, err)
		}
		if boxed {
			return KeyBytes(f.Interface())
		}
		switch f.Kind() {
		case reflect.Slice:
			return f.Bytes(), nil
		case reflect.String:
			return []byte(f.String()), nil
		case reflect.Bool:
			return strconv.AppendBool(nil, f.Bool()), nil
		case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
			return strconv.AppendInt(nil, f.Int(), 10), nil
		default:
			return strconv.AppendUint(nil, f.Uint(), 10), nil
		}
	}, nil
}

// stringer is the type of a key field whose key is its String() (KeyBytes).
var stringer = reflect.TypeFor[fmt.Stringer]()

// describeTags says how fields are named under tags: "the msgpack tag, else
// the json tag, else the Go name".
func describeTags(tags []string) string {
	var b strings.Builder
	for _, t := range tags {
		fmt.Fprintf(&b, "the %s tag, else ", t)
	}
	return b.String() + "the Go name"
}
