package schema

import (
	"reflect"
	"sort"
	"strings"
)

// JSONFields lists the fields of struct type t as encoding/json decodes
// them: named by their json tag, else their Go name; "-" and unexported
// fields left out; the fields of embedded structs without a tag name
// promoted, a shallower field hiding deeper ones of its name, and of two
// at the same depth the tagged one kept (neither when both or none are).
func JSONFields(t reflect.Type) []StructField {
	type found struct {
		StructField
		depth  int
		tagged bool
		index  []int
	}
	var all []found
	type level struct {
		t     reflect.Type
		index []int
	}
	visited := map[reflect.Type]bool{}
	next := []level{{t: t}}
	for depth := 0; len(next) > 0; depth++ {
		current := next
		next = nil
		for _, l := range current {
			if visited[l.t] {
				continue
			}
			visited[l.t] = true
			for i := range l.t.NumField() {
				f := l.t.Field(i)
				ft := f.Type
				if f.Anonymous {
					if ft.Kind() == reflect.Pointer {
						ft = ft.Elem()
					}
					if !f.IsExported() && ft.Kind() != reflect.Struct {
						continue
					}
				} else if !f.IsExported() {
					continue
				}
				tag := f.Tag.Get("json")
				if tag == "-" {
					continue
				}
				name, opts, _ := strings.Cut(tag, ",")
				index := append(append([]int(nil), l.index...), i)
				if f.Anonymous && name == "" && ft.Kind() == reflect.Struct {
					next = append(next, level{t: ft, index: index})
					continue
				}
				tagged := name != ""
				if name == "" {
					name = f.Name
				}
				quoted := false
				for _, o := range strings.Split(opts, ",") {
					quoted = quoted || o == "string"
				}
				all = append(all, found{StructField{Name: name, Type: f.Type, Quoted: quoted}, depth, tagged, index})
			}
		}
	}
	// Keep, per name, the dominant field: the shallowest, and of several
	// there the only tagged one.
	byName := map[string][]found{}
	for _, f := range all {
		byName[f.Name] = append(byName[f.Name], f)
	}
	var out []found
	for _, fs := range byName {
		shallowest := fs[0].depth
		for _, f := range fs {
			shallowest = min(shallowest, f.depth)
		}
		var top, tagged []found
		for _, f := range fs {
			if f.depth == shallowest {
				top = append(top, f)
				if f.tagged {
					tagged = append(tagged, f)
				}
			}
		}
		switch {
		case len(top) == 1:
			out = append(out, top[0])
		case len(tagged) == 1:
			out = append(out, tagged[0])
		}
	}
	sort.Slice(out, func(i, j int) bool { return lessIndex(out[i].index, out[j].index) })
	fields := make([]StructField, len(out))
	for i, f := range out {
		fields[i] = f.StructField
	}
	return fields
}

// lessIndex orders field indexes as the fields are declared.
func lessIndex(a, b []int) bool {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return a[i] < b[i]
		}
	}
	return len(a) < len(b)
}
