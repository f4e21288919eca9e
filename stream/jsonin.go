package stream

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
)

// EncodeJSON encodes one record given as JSON into an entry of the stream,
// ready for SendEntries: the way tools without the app's Go types send. A
// stream declared with a Go type decodes the JSON into that type first, so
// the entry is exactly what Send would write; a stream opened from its
// registry definition encodes the JSON object's fields with the stream's codec.
func (c *Core) EncodeJSON(data []byte, h Headers) (Entry, error) {
	if c.fromJSON == nil {
		return Entry{}, fmt.Errorf("stream %q cannot encode JSON records", c.def.Name)
	}
	e, err := c.fromJSON(data)
	if err != nil {
		return Entry{}, err
	}
	e.Headers = h
	return e, nil
}

// Open returns the untyped stream of a registry definition, declared in cat,
// whose records are JSON objects (map[string]any). Integers keep their exact
// value; the key field must be set (for streams keyed by a Go function, pass
// the field that holds the key).
func Open(cat *Catalog, def Definition) (*Core, error) {
	codec, err := LookupCodec(def.Codec)
	if err != nil {
		return nil, fmt.Errorf("stream %q: %w", def.Name, err)
	}
	if def.KeyField == "" {
		return nil, fmt.Errorf("stream %q: no key field to route JSON records by", def.Name)
	}
	opts := []Option{Partitions(def.Partitions), Size(def.Size), WithCodec(codec), KeyField(def.KeyField)}
	s, err := Declare[map[string]any](cat, def.Name, opts...)
	if err != nil {
		return nil, err
	}
	return s.core, nil
}

// decodeJSONRecord decodes one JSON record into v. Numbers inside untyped
// values (any) become int64 when integral, else float64, so that integers
// keep their exact value and key bytes.
func decodeJSONRecord(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if err := dec.Decode(v); err != nil {
		return jsonError(data, err)
	}
	if dec.More() {
		return errors.New("invalid JSON: more than one value")
	}
	if m, ok := v.(*map[string]any); ok {
		if *m == nil {
			return errors.New("record is null, want a JSON object")
		}
		for k, x := range *m {
			(*m)[k] = normalizeJSON(x)
		}
	}
	return nil
}

func jsonError(data []byte, err error) error {
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return fmt.Errorf("invalid JSON at byte %d: %w", se.Offset, err)
	}
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		if te.Field == "" {
			return fmt.Errorf("want a JSON object, got %s", te.Value)
		}
		return fmt.Errorf("field %q: JSON %s does not fit %s", te.Field, te.Value, te.Type)
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return errors.New("empty line, want a JSON object")
	}
	return fmt.Errorf("invalid JSON: %w", err)
}

func normalizeJSON(x any) any {
	switch v := x.(type) {
	case json.Number:
		if i, err := strconv.ParseInt(string(v), 10, 64); err == nil {
			return i
		}
		if u, err := strconv.ParseUint(string(v), 10, 64); err == nil {
			return u
		}
		f, _ := v.Float64()
		return f
	case map[string]any:
		for k, e := range v {
			v[k] = normalizeJSON(e)
		}
	case []any:
		for i, e := range v {
			v[i] = normalizeJSON(e)
		}
	}
	return x
}
