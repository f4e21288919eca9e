package schema

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"strings"
)

// ErrCorrupt is matched by the errors of Parse: the registry holds a
// schema that no program of this version writes.
var ErrCorrupt = errors.New("the registry holds a schema this version of leat does not write")

// Version is the version of the schema format this package writes and reads.
const Version = 1

// The decoders a schema's type is read with (see the package doc).
const (
	DecoderStream = "stream"        // a stream's JSON input: exact names, 12.0 is an integer
	DecoderJSON   = "encoding/json" // task payloads: names in any case, integers in digits only
)

// Kind is the kind of a JSON value a Type takes.
type Kind string

// The kinds of Type.
const (
	Object  Kind = "object"
	Map     Kind = "map"
	Array   Kind = "array"
	Bytes   Kind = "bytes"
	String  Kind = "string"
	Boolean Kind = "boolean"
	Integer Kind = "integer"
	Number  Kind = "number"
	Any     Kind = "any"
	None    Kind = "none"
)

// FormatDateTime is the format of a string holding an RFC 3339 time.
const FormatDateTime = "date-time"

// A Schema is what a record or payload must be: the type of the whole and
// the top-level fields it must hold, not null.
type Schema struct {
	Version  int      `json:"version"`
	Decoder  string   `json:"decoder"`
	Type     *Type    `json:"type"`
	Required []string `json:"required,omitempty"`
}

// A Type is the JSON one Go type decodes.
type Type struct {
	Kind   Kind    `json:"kind"`
	Fields []Field `json:"fields,omitempty"` // Object: the fields by encoded name
	Elem   *Type   `json:"elem,omitempty"`   // Array, Map: the elements' type
	Key    *Type   `json:"key,omitempty"`    // Map: an Integer for integer keys; nil: any name
	Len    *int    `json:"len,omitempty"`    // Array: the length the decoder insists on; nil: any
	Min    string  `json:"min,omitempty"`    // Integer: the least value, in decimal
	Max    string  `json:"max,omitempty"`    // Integer: the greatest value, in decimal
	Bits   int     `json:"bits,omitempty"`   // Number: 32 or 64
	Format string  `json:"format,omitempty"` // String: FormatDateTime or ""
}

// A Field is one encoded field of an Object.
type Field struct {
	Name string `json:"name"`
	Type *Type  `json:"type"`
}

// Marshal returns s as the JSON the registry records.
func (s *Schema) Marshal() ([]byte, error) { return json.Marshal(s) }

// maxDepth bounds the nesting of a schema read from the registry.
const maxDepth = 64

// Parse reads a schema recorded in the registry and checks it is one this
// package writes: a known version and decoder, known kinds, each with what
// it needs and nothing it cannot have, integer bounds that are integers.
// A registry entry is hostile input: a corrupt or hand-edited one is an
// error, never a check that lets everything through.
func Parse(b []byte) (*Schema, error) {
	s, err := parse(b)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrCorrupt, err)
	}
	return s, nil
}

func parse(b []byte) (*Schema, error) {
	var s Schema
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&s); err != nil {
		return nil, err
	}
	if s.Version != Version {
		return nil, fmt.Errorf("version %d, this program reads version %d", s.Version, Version)
	}
	if s.Decoder != DecoderStream && s.Decoder != DecoderJSON {
		return nil, fmt.Errorf("unknown decoder %q", s.Decoder)
	}
	if s.Type == nil {
		return nil, errors.New("no type")
	}
	if err := s.Type.validate("", 0); err != nil {
		return nil, err
	}
	for _, r := range s.Required {
		if r == "" {
			return nil, errors.New("a required field has no name")
		}
	}
	return &s, nil
}

// validate checks t, at path, depth levels down.
func (t *Type) validate(path string, depth int) error {
	if t == nil {
		return fmt.Errorf("%s: no type", where(path))
	}
	if depth > maxDepth {
		return fmt.Errorf("%s: nested deeper than %d", where(path), maxDepth)
	}
	extra := func(what string) error { return fmt.Errorf("%s: %s has no %s", where(path), t.Kind, what) }
	if t.Kind != Object && t.Fields != nil {
		return extra("fields")
	}
	if t.Kind != Array && t.Kind != Map && t.Elem != nil {
		return extra("element type")
	}
	if t.Kind != Map && t.Key != nil {
		return extra("key type")
	}
	if t.Kind != Array && t.Len != nil {
		return extra("length")
	}
	if t.Kind != Integer && (t.Min != "" || t.Max != "") {
		return extra("bounds")
	}
	if t.Kind != Number && t.Bits != 0 {
		return extra("bits")
	}
	if t.Kind != String && t.Format != "" {
		return extra("format")
	}
	switch t.Kind {
	case Object:
		seen := map[string]bool{}
		for _, f := range t.Fields {
			if f.Name == "" || seen[f.Name] {
				return fmt.Errorf("%s: field name %q empty or twice", where(path), f.Name)
			}
			seen[f.Name] = true
			if err := f.Type.validate(join(path, f.Name), depth+1); err != nil {
				return err
			}
		}
	case Array, Map:
		if t.Kind == Array && t.Len != nil && *t.Len < 0 {
			return fmt.Errorf("%s: negative length", where(path))
		}
		if t.Key != nil && t.Key.Kind != Integer {
			return fmt.Errorf("%s: a map's key type is an integer", where(path))
		}
		if t.Key != nil {
			if err := t.Key.validate(path, depth+1); err != nil {
				return err
			}
		}
		return t.Elem.validate(path+"[]", depth+1)
	case Integer:
		lo, ok1 := new(big.Int).SetString(t.Min, 10)
		hi, ok2 := new(big.Int).SetString(t.Max, 10)
		if !ok1 || !ok2 || lo.Cmp(hi) > 0 {
			return fmt.Errorf("%s: integer bounds %q to %q", where(path), t.Min, t.Max)
		}
	case Number:
		if t.Bits != 32 && t.Bits != 64 {
			return fmt.Errorf("%s: a number has 32 or 64 bits, not %d", where(path), t.Bits)
		}
	case String:
		if t.Format != "" && t.Format != FormatDateTime {
			return fmt.Errorf("%s: unknown string format %q", where(path), t.Format)
		}
	case Bytes, Boolean, Any, None:
	default:
		return fmt.Errorf("%s: unknown kind %q", where(path), t.Kind)
	}
	return nil
}

// where names path in messages.
func where(path string) string {
	if path == "" {
		return "the record"
	}
	return fmt.Sprintf("field %q", path)
}

func join(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}
