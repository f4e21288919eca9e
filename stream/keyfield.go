package stream

import (
	"fmt"
	"reflect"
	"strings"
)

// fieldKey returns a function reading the partition key from the field of T
// whose encoded name is name.
func fieldKey[T any](name string) (func(*T) ([]byte, error), error) {
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
	idx, ok := findField(st, name)
	if !ok {
		return nil, fmt.Errorf("key field %q: type %s has no such field (matched against msgpack tag, json tag, then Go name)", name, t)
	}
	ft := st.FieldByIndex(idx).Type
	switch ft.Kind() {
	case reflect.String, reflect.Bool,
		reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
	default:
		if !(ft.Kind() == reflect.Slice && ft.Elem().Kind() == reflect.Uint8) {
			return nil, fmt.Errorf("key field %q of type %s: use a string, an integer or a bool", name, ft)
		}
	}
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
		if f.Kind() == reflect.Slice {
			return f.Bytes(), nil
		}
		return KeyBytes(f.Interface())
	}, nil
}

// findField finds the exported field of st encoded as name, looking at
// msgpack tags, then json tags, then Go names (promoted fields included).
func findField(st reflect.Type, name string) ([]int, bool) {
	fields := reflect.VisibleFields(st)
	for _, tag := range []string{"msgpack", "json", ""} {
		for _, f := range fields {
			if !f.IsExported() || f.Anonymous {
				continue
			}
			n := f.Name
			if tag != "" {
				tv, ok := f.Tag.Lookup(tag)
				if !ok {
					continue
				}
				n, _, _ = strings.Cut(tv, ",")
			}
			if n == name {
				return f.Index, true
			}
		}
	}
	return nil, false
}
