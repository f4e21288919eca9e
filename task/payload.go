package task

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"strings"

	"github.com/leatdev/leat/internal/declared"
)

// payloadCheck returns the check of JSON payloads for a queue whose
// handlers decode them into P: nil when P takes any JSON (json.RawMessage,
// an interface). Declare records it in the app, so that the queue looked
// up from the registry in the same program (the embedded CLI's enqueue,
// the HTTP API) refuses what the handlers would not decode exactly.
func payloadCheck[P any]() declared.PayloadCheck {
	t := reflect.TypeFor[P]()
	if t == reflect.TypeFor[json.RawMessage]() || t.Kind() == reflect.Interface {
		return nil
	}
	return func(b []byte) error {
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.DisallowUnknownFields()
		var p P
		if err := dec.Decode(&p); err != nil {
			return describeDecodeError(err)
		}
		return nil
	}
}

// describeDecodeError says what encoding/json found wrong with a payload,
// by field and in JSON's terms rather than Go's.
func describeDecodeError(err error) error {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		want := jsonKind(te.Type)
		if te.Field == "" {
			return fmt.Errorf("%s does not fit the payload (want %s)", te.Value, want)
		}
		return fmt.Errorf("field %q: %s does not fit (want %s)", te.Field, te.Value, want)
	}
	return errors.New(strings.TrimPrefix(err.Error(), "json: "))
}

// jsonKind names what JSON value a Go type takes.
func jsonKind(t reflect.Type) string {
	switch t.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		bits := t.Bits()
		return fmt.Sprintf("an integer from %d to %d", -(int64(1) << (bits - 1)), int64(1)<<(bits-1)-1)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return fmt.Sprintf("an integer from 0 to %d", uint64(math.MaxUint64)>>(64-t.Bits()))
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Slice, reflect.Array:
		if t.Kind() == reflect.Slice && t.Elem().Kind() == reflect.Uint8 {
			return "a base64 string"
		}
		return "an array"
	case reflect.Map, reflect.Struct:
		return "an object"
	case reflect.Pointer:
		return jsonKind(t.Elem())
	}
	return "another value"
}
