package stream

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/leatdev/leat/internal/core"
)

// The types of the stream package that mirror those of the core it wraps
// (Definition, TableDefinition, Full, Headers) stay field for field and
// value for value the same: the registry's JSON is one format.
func TestSurfaceMirrorsCore(t *testing.T) {
	for _, c := range []struct{ ours, core Full }{{Trim, Full(core.FullTrim)}, {Refuse, Full(core.FullRefuse)}, {Wait, Full(core.FullWait)}} {
		if c.ours != c.core {
			t.Errorf("policy %q, core's %q", c.ours, c.core)
		}
	}
	for _, p := range []struct{ ours, core reflect.Type }{
		{reflect.TypeFor[Definition](), reflect.TypeFor[core.Definition]()},
		{reflect.TypeFor[TableDefinition](), reflect.TypeFor[core.TableDef]()},
	} {
		if p.ours.NumField() != p.core.NumField() {
			t.Fatalf("%v has %d fields, %v %d", p.ours, p.ours.NumField(), p.core, p.core.NumField())
		}
		for i := range p.ours.NumField() {
			o, c := p.ours.Field(i), p.core.Field(i)
			if o.Name != c.Name || o.Tag != c.Tag || o.Type.Kind() != c.Type.Kind() {
				t.Errorf("%v field %d: %s %v `%s`, core's %s %v `%s`", p.ours, i, o.Name, o.Type, o.Tag, c.Name, c.Type, c.Tag)
			}
		}
	}
	// definitionOf copies every field.
	d := core.Definition{Name: "orders", Partitions: 8, KeyField: "id", Size: 100, Codec: "json+gzip", EntryCodec: "msgpack", WhenFull: core.FullWait}
	want, _ := json.Marshal(d)
	got, _ := json.Marshal(definitionOf(d))
	if string(got) != string(want) {
		t.Errorf("definitionOf: %s, want %s", got, want)
	}
	var c Codec = core.MsgPack
	if back := core.Codec(c); back != core.MsgPack || Compressed(c, Zstd).Name() != "msgpack+zstd" {
		t.Errorf("codec %v does not round trip", back)
	}
}
