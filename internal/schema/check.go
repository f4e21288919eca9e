package schema

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"sort"
	"strconv"
	"strings"
	"time"
)

// CheckJSON checks JSON text against s: see Check.
func (s *Schema) CheckJSON(b []byte) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return fmt.Errorf("invalid JSON: %s", strings.TrimPrefix(err.Error(), "json: "))
	}
	return s.Check(v)
}

// Check checks v, JSON decoded with numbers as json.Number, against s, and
// says what is wrong by field: a member no field takes, a value of another
// kind, an integer out of range or with a fraction, a required field
// missing or null.
func (s *Schema) Check(v any) error {
	if len(s.Required) > 0 {
		m, ok := v.(map[string]any)
		if !ok {
			return fmt.Errorf("want an object, got %s", describe(v))
		}
		for _, r := range s.Required {
			if x, ok := m[r]; !ok || x == nil {
				return fmt.Errorf("field %q is missing (the record must have it)", r)
			}
		}
	}
	c := checker{fold: s.Decoder == DecoderJSON, plainIntegers: s.Decoder == DecoderJSON}
	return c.check(s.Type, v, "")
}

type checker struct {
	fold          bool // member names match fields without regard to case
	plainIntegers bool // integers are written with digits only (no 12.0, no 1e3)
}

func bad(path, format string, args ...any) error {
	msg := fmt.Sprintf(format, args...)
	if path == "" {
		return errors.New(msg)
	}
	return fmt.Errorf("field %q: %s", path, msg)
}

func (c checker) check(t *Type, v any, path string) error {
	if v == nil {
		return nil // null leaves the zero value
	}
	switch t.Kind {
	case Any:
		return nil
	case None:
		return bad(path, "cannot be given in JSON (only null)")
	case Boolean:
		if _, ok := v.(bool); !ok {
			return bad(path, "want true or false, got %s", describe(v))
		}
	case String:
		s, ok := v.(string)
		if !ok {
			return bad(path, "want a string, got %s", describe(v))
		}
		if t.Format == FormatDateTime {
			if _, err := time.Parse(time.RFC3339, s); err != nil {
				return bad(path, "%q is not an RFC 3339 time such as 2006-01-02T15:04:05Z", s)
			}
		}
	case Bytes:
		s, ok := v.(string)
		if !ok {
			return bad(path, "want a base64 string, got %s", describe(v))
		}
		if _, err := base64.StdEncoding.DecodeString(s); err != nil {
			return bad(path, "want a base64 string: %v", err)
		}
	case Integer:
		n, ok := v.(json.Number)
		if !ok {
			return bad(path, "want an integer, got %s", describe(v))
		}
		return c.integer(t, string(n), path)
	case Number:
		n, ok := v.(json.Number)
		if !ok {
			return bad(path, "want a number, got %s", describe(v))
		}
		if _, err := strconv.ParseFloat(string(n), t.Bits); err != nil {
			return bad(path, "%s is out of range for this field", n)
		}
	case Array:
		a, ok := v.([]any)
		if !ok {
			return bad(path, "want an array, got %s", describe(v))
		}
		if t.Len != nil && len(a) != *t.Len {
			return bad(path, "want an array of %d elements, got %d", *t.Len, len(a))
		}
		for i, e := range a {
			if err := c.check(t.Elem, e, fmt.Sprintf("%s[%d]", path, i)); err != nil {
				return err
			}
		}
	case Map:
		m, ok := v.(map[string]any)
		if !ok {
			return bad(path, "want an object, got %s", describe(v))
		}
		for _, k := range sortedKeys(m) {
			if t.Key != nil {
				if err := c.integer(t.Key, k, join(path, k)); err != nil {
					return bad(join(path, k), "want an integer key in range (%s to %s)", t.Key.Min, t.Key.Max)
				}
			}
			if err := c.check(t.Elem, m[k], join(path, k)); err != nil {
				return err
			}
		}
	case Object:
		m, ok := v.(map[string]any)
		if !ok {
			return bad(path, "want an object, got %s", describe(v))
		}
		for _, k := range sortedKeys(m) {
			f, ok := c.field(t, k)
			if !ok {
				return unknown(t, join(path, k), k)
			}
			if err := c.check(f.Type, m[k], join(path, k)); err != nil {
				return err
			}
		}
	}
	return nil
}

// integer checks the integer n, written as in JSON, against t's range.
func (c checker) integer(t *Type, n, path string) error {
	var i *big.Int
	if c.plainIntegers {
		if strings.ContainsAny(n, ".eE") {
			return bad(path, "%s is not an integer (write it without a fraction or an exponent)", n)
		}
		var ok bool
		if i, ok = new(big.Int).SetString(n, 10); !ok {
			return bad(path, "%s is not an integer", n)
		}
	} else {
		var ok bool
		if i, ok = exactInt(n); !ok {
			return bad(path, "%s is not an integer", n)
		}
	}
	lo, _ := new(big.Int).SetString(t.Min, 10)
	hi, _ := new(big.Int).SetString(t.Max, 10)
	if i.Cmp(lo) < 0 || i.Cmp(hi) > 0 {
		return bad(path, "%s is out of range (%s to %s)", n, t.Min, t.Max)
	}
	return nil
}

// exactInt parses a JSON number whose value is an integer, such as 12, 1e3
// or 12.0; it reports false for any other (12.5, 1e-3).
func exactInt(s string) (*big.Int, bool) {
	if !strings.ContainsAny(s, ".eE") {
		return new(big.Int).SetString(s, 10)
	}
	if i := strings.IndexAny(s, "eE"); i >= 0 { // bound the exponent before big.Rat expands it
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

// field returns the field of object t that member name sets.
func (c checker) field(t *Type, name string) (Field, bool) {
	for _, f := range t.Fields {
		if f.Name == name {
			return f, true
		}
	}
	if c.fold {
		for _, f := range t.Fields {
			if bytes.EqualFold([]byte(f.Name), []byte(name)) {
				return f, true
			}
		}
	}
	return Field{}, false
}

// unknown reports member name at path, which no field of t takes, with the
// known fields and the one it likely meant.
func unknown(t *Type, path, name string) error {
	names := make([]string, len(t.Fields))
	for i, f := range t.Fields {
		names[i] = f.Name
	}
	if len(names) == 0 {
		return fmt.Errorf("unknown field %q: the record has no fields", path)
	}
	hint := ""
	fold := func(s string) string { return strings.ToLower(strings.NewReplacer("_", "", "-", "").Replace(s)) }
	for _, n := range names {
		if fold(n) == fold(name) || (len(name) > 2 && oneEdit(n, name)) {
			hint = fmt.Sprintf(" (did you mean %q?)", n)
			break
		}
	}
	sort.Strings(names)
	if len(names) > 20 {
		names = append(names[:20:20], "...")
	}
	return fmt.Errorf("unknown field %q%s; known: %s", path, hint, strings.Join(names, ", "))
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

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// describe names the kind of a decoded JSON value, for messages.
func describe(v any) string {
	switch v.(type) {
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
	}
	return "a value"
}
