package core

import (
	"bytes"
	"context"
	"fmt"
	"reflect"
	"sync/atomic"

	"github.com/leatdev/leat/internal/rdb"
	"github.com/leatdev/leat/internal/schema"
	"github.com/leatdev/leat/internal/topology"
)

// A stream's schema in the registry: a program that declares a stream with
// a Go type records the JSON that type decodes (package internal/schema)
// when it registers the stream, so that tools without the type (the
// standalone CLI, the HTTP API) refuse the records its processors would
// not decode. A stream opened from its registry definition (Open) records
// nothing and checks records against the schema it reads (LoadSchema).

// schemaState is what a stream does with its schema in the registry.
type schemaState struct {
	opened bool   // opened from the registry: reads the schema, never writes it
	record []byte // declared with a Go type: its schema (nil: a type that takes any JSON, so none)

	raw     atomic.Pointer[[]byte]        // the schema last read (opened streams)
	current atomic.Pointer[schema.Schema] // parsed; nil: none
}

// recordSchema returns the schema of the JSON records of type T that a
// stream declared with spec reads, encoded, or nil when T takes any JSON.
func recordSchema[T any](spec Spec) ([]byte, error) {
	tags := tagsOf(spec.Codec)
	o := schema.Options{Decoder: schema.DecoderStream, Fields: func(t reflect.Type) []schema.StructField {
		fs := fieldsOf(t, tags)
		out := make([]schema.StructField, len(fs.list))
		for i, f := range fs.list {
			out[i] = schema.StructField{Name: f.name, Type: f.typ}
		}
		return out
	}}
	if spec.KeyField != "" {
		o.Required = []string{spec.KeyField}
	}
	s := schema.Of(reflect.TypeFor[T](), o)
	if s == nil {
		return nil, nil
	}
	return s.Marshal()
}

// writeSchema records the stream's schema in the registry, or removes the
// one there when the stream's type takes any JSON; a stream opened from the
// registry leaves it. A Redis user that may only read the registry (a
// producer's ACL) leaves it too: the stream's workers record it.
func (c *Core) writeSchema(ctx context.Context) error {
	if c.schema.opened {
		return nil
	}
	err := rdb.SetSchema(ctx, c.catalog.client, c.catalog.keys.Schemas(), rdb.SchemaField(rdb.SchemaStream, c.def.Name), c.schema.record)
	if err != nil && !topology.Denied(err) {
		return fmt.Errorf("record the schema of stream %q: %w", c.def.Name, err)
	}
	return nil
}

// LoadSchema reads the schema the program that declared the stream
// recorded in the registry, which EncodeJSON then checks records against;
// a stream without one takes any JSON object. It is for a stream opened
// from the registry (Open), and does nothing for one declared with a Go
// type, which reads records with that type. Call it before each request's
// records: a redeploy may record another schema.
func (c *Core) LoadSchema(ctx context.Context) error {
	if !c.schema.opened {
		return nil
	}
	b, ok, err := rdb.Schema(ctx, c.catalog.client, c.catalog.keys.Schemas(), rdb.SchemaField(rdb.SchemaStream, c.def.Name))
	if err != nil {
		return fmt.Errorf("read the schema of stream %q: %w", c.def.Name, err)
	}
	if !ok {
		c.schema.current.Store(nil)
		c.schema.raw.Store(nil)
		return nil
	}
	if old := c.schema.raw.Load(); old != nil && bytes.Equal(*old, b) && c.schema.current.Load() != nil {
		return nil
	}
	s, err := schema.Parse(b)
	if err != nil {
		return fmt.Errorf("stream %q: %w", c.def.Name, err)
	}
	c.schema.current.Store(s)
	c.schema.raw.Store(&b)
	return nil
}

// checkSchema wraps read, a stream's JSON input, with the check of the
// schema last loaded (LoadSchema).
func (c *Core) checkSchema(read func([]byte) (Entry, error)) func([]byte) (Entry, error) {
	return func(b []byte) (Entry, error) {
		e, err := read(b) // the record's own errors (JSON, key) first
		if err != nil {
			return Entry{}, err
		}
		if s := c.schema.current.Load(); s != nil {
			tree, err := parseJSONObject(b)
			if err != nil {
				return Entry{}, err
			}
			if err := s.Check(tree); err != nil {
				return Entry{}, err
			}
		}
		return e, nil
	}
}
