package core

import (
	"reflect"
)

// Kinds of partition keys, as joins compare them: two streams whose keys
// are of different kinds route the same value (customer 42, "42") the
// same way only by chance of its text.
const (
	KeyText    = "text"    // strings, byte slices, fmt.Stringers
	KeyInteger = "integer" // signed and unsigned integers
	KeyBool    = "bool"
)

// KeyKindOf returns the kind of partition keys of type t ("" when t is
// none of them).
func KeyKindOf(t reflect.Type) string {
	if t == nil {
		return ""
	}
	if t.Implements(stringer) {
		return KeyText
	}
	switch t.Kind() {
	case reflect.String:
		return KeyText
	case reflect.Bool:
		return KeyBool
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return KeyInteger
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Uint8 {
			return KeyText
		}
	}
	return ""
}

// fieldKeyKind returns the kind of the key field name of T under tags, ""
// when it is not known before a record is seen (records of map type).
func fieldKeyKind[T any](name string, tags []string) string {
	t := reflect.TypeFor[T]()
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct {
		return ""
	}
	f, ok := fieldsOf(t, tags).lookup(name)
	if !ok {
		return ""
	}
	return KeyKindOf(f.typ)
}

// KeyKind returns the kind of the stream's partition keys (KeyText,
// KeyInteger, KeyBool), "" when unknown (a stream opened from the registry,
// records of map type).
func (c *Core) KeyKind() string { return c.keyKind }
