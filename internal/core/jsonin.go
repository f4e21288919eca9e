package core

import (
	"bytes"
	"encoding"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/big"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// EncodeJSON encodes one record given as a JSON object into an entry of the
// stream, ready for SendEntries: the way tools without the app's Go types
// send.
//
// The object's fields are named as the stream's codec names them (see
// KeyField), so the key and the stored record are the same whether the
// stream was declared with a Go type or opened from its registry
// definition. A stream declared with a Go type reads the JSON strictly into
// that type: an unknown field, a value of the wrong kind (a number for a
// string, 1.5 for an integer, 300 for a uint8) is an error; the encoded entry
// is then decoded again, so an entry EncodeJSON accepts is one the stream's
// processors can decode. A stream opened from its registry definition keeps
// the object's fields as they are; integers keep their exact value (int64,
// else uint64; beyond that they are refused).
//
// The input must be valid UTF-8; errors name the field and the problem, never
// Go types.
func (c *Core) EncodeJSON(data []byte, h Headers) (Entry, error) {
	if c.fromJSON == nil {
		return Entry{}, fmt.Errorf("stream %q cannot encode JSON records", c.def.Name)
	}
	if err := CheckHeaders(h); err != nil {
		return Entry{}, err
	}
	e, err := c.fromJSON(data)
	if err != nil {
		return Entry{}, err
	}
	e.Headers = h
	return e, nil
}

// jsonRecordReader returns the function that reads one JSON record into a
// T, with the field names of tags. When keyField is set, the record must
// have that field, not null: a record without its key is refused rather
// than routed by a zero value.
func jsonRecordReader[T any](tags []string, keyField string) func([]byte, *T) error {
	return func(data []byte, v *T) error {
		tree, err := parseJSONObject(data)
		if err != nil {
			return err
		}
		if keyField != "" {
			if k, ok := tree.(map[string]any)[keyField]; !ok || k == nil {
				return fmt.Errorf("key field %q is missing", keyField)
			}
		}
		return jsonReader{tags: tags}.assign(reflect.ValueOf(v).Elem(), tree, "")
	}
}

// parseJSONObject parses one JSON object, with numbers as json.Number. It
// refuses invalid UTF-8 (which encoding/json would replace with U+FFFD),
// before any syntax error, then what else CheckJSONText refuses: escaped
// lone surrogates, which would become U+FFFD too, and names twice.
func parseJSONObject(data []byte) (any, error) {
	if i := invalidUTF8(data); i >= 0 {
		return nil, fmt.Errorf("invalid UTF-8 at byte %d", i+1)
	}
	trimmed := bytes.TrimSpace(data)
	if len(trimmed) == 0 {
		return nil, errors.New("empty record, want a JSON object")
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var tree any
	if err := dec.Decode(&tree); err != nil {
		var se *json.SyntaxError
		if errors.As(err, &se) {
			return nil, fmt.Errorf("invalid JSON at byte %d: %s", se.Offset, strings.TrimPrefix(se.Error(), "json: "))
		}
		if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
			return nil, errors.New("invalid JSON: the record ends too early")
		}
		return nil, fmt.Errorf("invalid JSON: %s", strings.TrimPrefix(err.Error(), "json: "))
	}
	if rest := bytes.TrimSpace(data[dec.InputOffset():]); len(rest) > 0 {
		return nil, fmt.Errorf("invalid JSON at byte %d: more after the object", int(dec.InputOffset())+bytes.Index(data[dec.InputOffset():], rest[:1])+1)
	}
	if _, ok := tree.(map[string]any); !ok {
		return nil, fmt.Errorf("want a JSON object, got %s", describeJSON(tree))
	}
	if err := CheckJSONText(trimmed); err != nil {
		return nil, err
	}
	return tree, nil
}

// twice is the error for a member name an object holds twice.
func twice(path string) error {
	return fmt.Errorf("field %q appears twice in its object (a reader would see one of the values, or refuse the record)", path)
}

// CheckJSONText refuses JSON text that encoding/json would decode with
// replacements: bytes that are not valid UTF-8, and escaped lone
// surrogates (\ud800 with no low half), both of which become U+FFFD in Go
// and fail or differ in other languages' decoders; and objects that hold a
// member name twice, of which decoders keep one value or refuse the text.
// It does not check the syntax (json.Valid does).
func CheckJSONText(data []byte) error {
	if i := invalidUTF8(data); i >= 0 {
		return fmt.Errorf("invalid UTF-8 at byte %d", i+1)
	}
	if bad := loneSurrogate(data); bad != "" {
		return fmt.Errorf("invalid JSON string: %s is half of a UTF-16 surrogate pair", bad)
	}
	if name, ok := duplicateName(data); ok {
		return twice(name)
	}
	return nil
}

// invalidUTF8 returns the offset of the first byte of b that is not valid
// UTF-8, or -1.
func invalidUTF8(b []byte) int {
	if utf8.Valid(b) {
		return -1
	}
	for i := 0; i < len(b); {
		r, n := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && n <= 1 {
			return i
		}
		i += n
	}
	return -1
}

// loneSurrogate returns the first \uD800-\uDFFF escape of b that is not part
// of a high-low pair, or "".
func loneSurrogate(b []byte) string {
	hex := func(i int) (rune, bool) {
		if i+6 > len(b) || b[i] != '\\' || b[i+1] != 'u' {
			return 0, false
		}
		v, err := strconv.ParseUint(string(b[i+2:i+6]), 16, 16)
		return rune(v), err == nil
	}
	for i := 0; i < len(b); i++ {
		if b[i] != '\\' {
			continue
		}
		if i+1 < len(b) && b[i+1] != 'u' {
			i++ // an escape such as \\ or \"
			continue
		}
		r, ok := hex(i)
		if !ok {
			continue
		}
		switch {
		case r >= 0xD800 && r < 0xDC00:
			if lo, ok := hex(i + 6); ok && lo >= 0xDC00 && lo < 0xE000 {
				i += 11
				continue
			}
			return string(b[i : i+6])
		case r >= 0xDC00 && r < 0xE000:
			return string(b[i : i+6])
		}
		i += 5
	}
	return ""
}

// describeJSON names the kind of a parsed JSON value, for messages.
func describeJSON(v any) string {
	switch v := v.(type) {
	case nil:
		return "null"
	case bool:
		return "a boolean"
	case json.Number:
		return "a number"
	case string:
		return "a string"
	case []any:
		return "an array"
	case map[string]any:
		return "an object"
	default:
		_ = v
		return "a value"
	}
}

// jsonReader assigns parsed JSON values to Go values strictly: no unknown
// fields, no value of another kind, no number that does not fit exactly.
// Struct fields are matched by the names tags give them.
type jsonReader struct {
	tags []string
}

// fieldError is a problem with the value at a field path.
type fieldError struct {
	path string
	msg  string
}

func (e *fieldError) Error() string {
	if e.path == "" {
		return e.msg
	}
	return fmt.Sprintf("field %q: %s", e.path, e.msg)
}

func bad(path, format string, args ...any) error {
	return &fieldError{path: path, msg: fmt.Sprintf(format, args...)}
}

var (
	jsonUnmarshalerType = reflect.TypeFor[json.Unmarshaler]()
	textUnmarshalerType = reflect.TypeFor[encoding.TextUnmarshaler]()
)

func join(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}

// assign sets dst from v, parsed JSON, at path.
func (r jsonReader) assign(dst reflect.Value, v any, path string) error {
	t := dst.Type()
	if t.Kind() != reflect.Pointer && t.Kind() != reflect.Interface &&
		(reflect.PointerTo(t).Implements(jsonUnmarshalerType) || reflect.PointerTo(t).Implements(textUnmarshalerType)) {
		return r.assignUnmarshaler(dst, v, path)
	}
	if v == nil { // null leaves the zero value, as an absent field does
		dst.SetZero()
		return nil
	}
	switch t.Kind() {
	case reflect.Pointer:
		p := reflect.New(t.Elem())
		if err := r.assign(p.Elem(), v, path); err != nil {
			return err
		}
		dst.Set(p)
		return nil
	case reflect.Interface:
		if t.NumMethod() != 0 {
			return bad(path, "this field cannot be given in JSON")
		}
		g, err := generic(v, path)
		if err != nil {
			return err
		}
		dst.Set(reflect.ValueOf(g))
		return nil
	case reflect.Bool:
		b, ok := v.(bool)
		if !ok {
			return bad(path, "want true or false, got %s", describeJSON(v))
		}
		dst.SetBool(b)
		return nil
	case reflect.String:
		s, ok := v.(string)
		if !ok {
			return bad(path, "want a string, got %s", describeJSON(v))
		}
		dst.SetString(s)
		return nil
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		n, ok := v.(json.Number)
		if !ok {
			return bad(path, "want an integer, got %s", describeJSON(v))
		}
		bits := t.Bits()
		lo, hi := -(int64(1) << (bits - 1)), int64(1)<<(bits-1)-1
		i, ok := exactInt(string(n))
		if !ok {
			return bad(path, "%s is not an integer", n)
		}
		if !i.IsInt64() || i.Int64() < lo || i.Int64() > hi {
			return bad(path, "%s is out of range (%d to %d)", n, lo, hi)
		}
		dst.SetInt(i.Int64())
		return nil
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		n, ok := v.(json.Number)
		if !ok {
			return bad(path, "want an integer, got %s", describeJSON(v))
		}
		hi := uint64(math.MaxUint64) >> (64 - t.Bits())
		i, ok := exactInt(string(n))
		if !ok {
			return bad(path, "%s is not an integer", n)
		}
		if i.Sign() < 0 || !i.IsUint64() || i.Uint64() > hi {
			return bad(path, "%s is out of range (0 to %d)", n, hi)
		}
		dst.SetUint(i.Uint64())
		return nil
	case reflect.Float32, reflect.Float64:
		n, ok := v.(json.Number)
		if !ok {
			return bad(path, "want a number, got %s", describeJSON(v))
		}
		f, err := strconv.ParseFloat(string(n), t.Bits())
		if err != nil {
			return bad(path, "%s is out of range for this field", n)
		}
		dst.SetFloat(f)
		return nil
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Uint8 {
			s, ok := v.(string)
			if !ok {
				return bad(path, "want a base64 string, got %s", describeJSON(v))
			}
			b, err := base64.StdEncoding.DecodeString(s)
			if err != nil {
				return bad(path, "want a base64 string: %v", err)
			}
			dst.SetBytes(b)
			return nil
		}
		a, ok := v.([]any)
		if !ok {
			return bad(path, "want an array, got %s", describeJSON(v))
		}
		s := reflect.MakeSlice(t, len(a), len(a))
		for i, e := range a {
			if err := r.assign(s.Index(i), e, fmt.Sprintf("%s[%d]", path, i)); err != nil {
				return err
			}
		}
		dst.Set(s)
		return nil
	case reflect.Array:
		a, ok := v.([]any)
		if !ok {
			return bad(path, "want an array, got %s", describeJSON(v))
		}
		if len(a) != t.Len() {
			return bad(path, "want an array of %d elements, got %d", t.Len(), len(a))
		}
		for i, e := range a {
			if err := r.assign(dst.Index(i), e, fmt.Sprintf("%s[%d]", path, i)); err != nil {
				return err
			}
		}
		return nil
	case reflect.Map:
		return r.assignMap(dst, v, path)
	case reflect.Struct:
		return r.assignStruct(dst, v, path)
	}
	return bad(path, "this field cannot be given in JSON")
}

func (r jsonReader) assignMap(dst reflect.Value, v any, path string) error {
	t := dst.Type()
	m, ok := v.(map[string]any)
	if !ok {
		return bad(path, "want an object, got %s", describeJSON(v))
	}
	kt := t.Key()
	switch kt.Kind() {
	case reflect.String,
		reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
	default:
		return bad(path, "this field cannot be given in JSON")
	}
	out := reflect.MakeMapWithSize(t, len(m))
	for _, k := range slices.Sorted(mapKeys(m)) {
		kv := reflect.New(kt).Elem()
		sub := join(path, k)
		if kt.Kind() == reflect.String {
			kv.SetString(k)
		} else if err := r.assign(kv, json.Number(k), sub); err != nil {
			return bad(sub, "want an integer key")
		}
		ev := reflect.New(t.Elem()).Elem()
		if err := r.assign(ev, m[k], sub); err != nil {
			return err
		}
		out.SetMapIndex(kv, ev)
	}
	dst.Set(out)
	return nil
}

func mapKeys(m map[string]any) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

func (r jsonReader) assignStruct(dst reflect.Value, v any, path string) error {
	m, ok := v.(map[string]any)
	if !ok {
		return bad(path, "want an object, got %s", describeJSON(v))
	}
	fs := fieldsOf(dst.Type(), r.tags)
	for _, k := range slices.Sorted(mapKeys(m)) {
		f, ok := fs.lookup(k)
		if !ok {
			return unknownField(fs, join(path, k), k)
		}
		fv, err := fieldByIndexAlloc(dst, f.index)
		if err != nil {
			return bad(join(path, k), "%v", err)
		}
		if err := r.assign(fv, m[k], join(path, k)); err != nil {
			return err
		}
	}
	return nil
}

// unknownField reports field name at path, suggesting a known field that
// differs only in case, punctuation or one typo, or listing the fields.
func unknownField(fs *structFields, path, name string) error {
	names := fs.names()
	fold := func(s string) string {
		return strings.ToLower(strings.NewReplacer("_", "", "-", "").Replace(s))
	}
	for _, n := range names {
		if fold(n) == fold(name) || (len(name) > 2 && oneEdit(n, name)) {
			return bad(path, "unknown field; did you mean %q?", n)
		}
	}
	if len(names) == 0 {
		return bad(path, "unknown field: the record has no fields")
	}
	if len(names) > 12 {
		names = append(names[:12:12], "...")
	}
	return bad(path, "unknown field (the record's fields are %s)", strings.Join(names, ", "))
}

// oneEdit reports whether a and b differ by one inserted, deleted or
// replaced byte.
func oneEdit(a, b string) bool {
	if len(a) < len(b) {
		a, b = b, a
	}
	if len(a)-len(b) > 1 {
		return false
	}
	i := 0
	for i < len(b) && a[i] == b[i] {
		i++
	}
	if i == len(b) {
		return true
	}
	if len(a) == len(b) {
		return a[i+1:] == b[i+1:]
	}
	return a[i+1:] == b[i:]
}

// fieldByIndexAlloc is v.FieldByIndex(index), allocating nil embedded
// struct pointers on the way.
func fieldByIndexAlloc(v reflect.Value, index []int) (reflect.Value, error) {
	for i, x := range index {
		if i > 0 && v.Kind() == reflect.Pointer {
			if v.IsNil() {
				if !v.CanSet() {
					return reflect.Value{}, errors.New("cannot be set through an unexported embedded pointer")
				}
				v.Set(reflect.New(v.Type().Elem()))
			}
			v = v.Elem()
		}
		v = v.Field(x)
	}
	return v, nil
}

// assignUnmarshaler sets dst, whose type decodes JSON itself (time.Time and
// the like), from v.
func (r jsonReader) assignUnmarshaler(dst reflect.Value, v any, path string) error {
	b, err := json.Marshal(v)
	if err != nil {
		return bad(path, "invalid value")
	}
	p := reflect.New(dst.Type())
	if err := json.Unmarshal(b, p.Interface()); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return bad(path, "%s does not fit this field", describeJSON(v))
		}
		return bad(path, "invalid value: %s", strings.TrimPrefix(err.Error(), "json: "))
	}
	dst.Set(p.Elem())
	return nil
}

// generic returns v with its numbers as int64 (integers that fit), uint64
// (larger integers that fit), or float64 (numbers written with a fraction or
// an exponent). An integer beyond 64 bits is an error rather than a float
// that would lose its digits.
func generic(v any, path string) (any, error) {
	switch v := v.(type) {
	case json.Number:
		s := string(v)
		if !strings.ContainsAny(s, ".eE") {
			if i, err := strconv.ParseInt(s, 10, 64); err == nil {
				return i, nil
			}
			if u, err := strconv.ParseUint(s, 10, 64); err == nil {
				return u, nil
			}
			return nil, bad(path, "integer %s does not fit in 64 bits (%d to %d): send it as a string", s, int64(math.MinInt64), uint64(math.MaxUint64))
		}
		f, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return nil, bad(path, "number %s is out of range", s)
		}
		return f, nil
	case map[string]any:
		for k, e := range v {
			g, err := generic(e, join(path, k))
			if err != nil {
				return nil, err
			}
			v[k] = g
		}
	case []any:
		for i, e := range v {
			g, err := generic(e, fmt.Sprintf("%s[%d]", path, i))
			if err != nil {
				return nil, err
			}
			v[i] = g
		}
	}
	return v, nil
}

// exactInt parses a JSON number whose value is an integer, such as 12, 1e3
// or 12.0; it reports false for any other (12.5, 1e-3).
func exactInt(s string) (*big.Int, bool) {
	if !strings.ContainsAny(s, ".eE") {
		i, ok := new(big.Int).SetString(s, 10)
		return i, ok
	}
	// Bound the exponent before big.Rat expands it.
	if i := strings.IndexAny(s, "eE"); i >= 0 {
		if e, err := strconv.Atoi(s[i+1:]); err != nil || e > 400 || e < -400 {
			return nil, false
		}
	}
	q, ok := new(big.Rat).SetString(s)
	if !ok || !q.IsInt() {
		return nil, false
	}
	return q.Num(), true
}
