package core

import (
	"reflect"
	"strings"
	"sync"
)

// Field names. A codec names the fields of a struct record by struct tags:
// msgpack by the `msgpack` tag, else the `json` tag, else the Go name; JSON by
// the `json` tag, else the Go name. The key field (KeyField) and JSON records
// given to EncodeJSON use the same names as the stream's codec, so that a
// record's key and its stored form agree with what tools without the Go type
// see.

// fieldNamer is implemented by codecs that name struct fields by tags. Tags
// returns the tags looked at, in order; the first one present on a field
// (even with an empty name, as in `msgpack:",omitempty"`) decides its name,
// and an empty name means the Go name. Codecs that do not implement it name
// fields as MsgPack does.
type fieldNamer interface {
	structTags() []string
}

var (
	msgpackTags = []string{"msgpack", "json"}
	jsonTags    = []string{"json"}
)

// tagsOf returns the struct tags codec c names fields by.
func tagsOf(c Codec) []string {
	if n, ok := c.(fieldNamer); ok {
		return n.structTags()
	}
	return msgpackTags
}

// structField is one encoded field of a struct type.
type structField struct {
	name  string
	index []int
	typ   reflect.Type
}

// structFields lists the encoded fields of struct type t under tags, in
// declaration order, with embedded structs inlined (their fields promoted
// unless a field of the same name is already there).
type structFields struct {
	list   []structField
	byName map[string]int
}

type fieldsKey struct {
	t    reflect.Type
	tags string
}

var fieldsCache sync.Map // fieldsKey -> *structFields

func fieldsOf(t reflect.Type, tags []string) *structFields {
	k := fieldsKey{t, strings.Join(tags, ",")}
	if fs, ok := fieldsCache.Load(k); ok {
		return fs.(*structFields)
	}
	fs := &structFields{byName: map[string]int{}}
	collectFields(fs, t, nil, tags, 0)
	v, _ := fieldsCache.LoadOrStore(k, fs)
	return v.(*structFields)
}

func collectFields(fs *structFields, t reflect.Type, prefix []int, tags []string, depth int) {
	for i := range t.NumField() {
		f := t.Field(i)
		tag, tagged := "", false
		for _, name := range tags {
			if v, ok := f.Tag.Lookup(name); ok && v != "" {
				tag, tagged = v, true
				break
			}
		}
		name, opts, _ := strings.Cut(tag, ",")
		if name == "-" && !strings.Contains(tag, ",") {
			continue
		}
		if !f.IsExported() && !f.Anonymous {
			continue
		}
		index := append(append([]int(nil), prefix...), i)
		if f.Anonymous && !strings.Contains(opts, "noinline") && depth < 8 {
			et := f.Type
			if et.Kind() == reflect.Pointer {
				et = et.Elem()
			}
			if et.Kind() == reflect.Struct && (!tagged || name == "" || strings.Contains(opts, "inline")) {
				collectFields(fs, et, index, tags, depth+1)
				continue
			}
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		if _, dup := fs.byName[name]; dup {
			continue // shadowed by an outer field
		}
		fs.byName[name] = len(fs.list)
		fs.list = append(fs.list, structField{name: name, index: index, typ: f.Type})
	}
}

// lookup returns the field encoded as name.
func (fs *structFields) lookup(name string) (structField, bool) {
	i, ok := fs.byName[name]
	if !ok {
		return structField{}, false
	}
	return fs.list[i], true
}

// names returns the encoded field names in declaration order.
func (fs *structFields) names() []string {
	out := make([]string, len(fs.list))
	for i, f := range fs.list {
		out[i] = f.name
	}
	return out
}
