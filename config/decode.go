package config

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// decoder walks a file's YAML nodes and collects every mistake, with its
// line and field path. It never coerces: a count is an integer node, a
// duration a string node such as "30s", a flag a boolean node.
type decoder struct {
	file string
	errs Errors
}

func (d *decoder) errorf(n *yaml.Node, path, format string, args ...any) {
	line := 0
	if n != nil {
		line = n.Line
	}
	d.errs = append(d.errs, &FieldError{File: d.file, Line: line, Path: path, Msg: fmt.Sprintf(format, args...)})
}

// join returns the path of field name under path.
func join(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}

// describe names a node's value in an error: its text quoted when it is a
// string, as written otherwise.
func describe(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.AliasNode:
		return "an alias"
	}
	switch n.Tag {
	case "!!str":
		return strconv.Quote(n.Value)
	case "!!null":
		return "null"
	}
	return n.Value
}

// entry is one field of a mapping.
type entry struct {
	key   *yaml.Node
	value *yaml.Node
}

// mapping returns the fields of mapping n by name, refusing a node that is
// not a mapping, a key that is not a plain string, a field twice, and (when
// known is not nil) a field not in known. order gets the names in the
// file's order.
func (d *decoder) mapping(n *yaml.Node, path string, known []string) (fields map[string]entry, order []string, ok bool) {
	if n.Kind != yaml.MappingNode {
		d.errorf(n, path, "must be a mapping, got %s", describe(n))
		return nil, nil, false
	}
	fields = map[string]entry{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if k.Kind != yaml.ScalarNode || k.Tag != "!!str" {
			d.errorf(k, path, "field names must be strings, got %s", describe(k))
			continue
		}
		p := join(path, k.Value)
		if _, dup := fields[k.Value]; dup {
			d.errorf(k, p, "given twice (also at line %d)", fields[k.Value].key.Line)
			continue
		}
		if known != nil && !contains(known, k.Value) {
			d.errorf(k, p, "unknown field (known: %s)", strings.Join(sorted(known), ", "))
			continue
		}
		if v.Kind == yaml.AliasNode || k.Value == "<<" {
			d.errorf(v, p, "anchors, aliases and merge keys are not supported: write the value out")
			continue
		}
		fields[k.Value] = entry{k, v}
		order = append(order, k.Value)
	}
	return fields, order, true
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func sorted(list []string) []string {
	out := append([]string(nil), list...)
	sort.Strings(out)
	return out
}

// integer reads an integer node within lo..hi.
func (d *decoder) integer(n *yaml.Node, path string, lo, hi int64) (int64, bool) {
	if n.Kind != yaml.ScalarNode || n.Tag != "!!int" {
		d.errorf(n, path, "must be an integer %d..%d, got %s", lo, hi, describe(n))
		return 0, false
	}
	var v int64
	if err := n.Decode(&v); err != nil || v < lo || v > hi {
		d.errorf(n, path, "must be an integer %d..%d, got %s", lo, hi, n.Value)
		return 0, false
	}
	return v, true
}

// count is integer for an int field.
func (d *decoder) count(n *yaml.Node, path string, lo, hi int) (int, bool) {
	v, ok := d.integer(n, path, int64(lo), int64(hi))
	return int(v), ok
}

// str reads a string node; empty strings are refused.
func (d *decoder) str(n *yaml.Node, path string) (string, bool) {
	if n.Kind != yaml.ScalarNode || n.Tag != "!!str" {
		d.errorf(n, path, "must be a string, got %s", describe(n))
		return "", false
	}
	if n.Value == "" {
		d.errorf(n, path, "must not be empty")
		return "", false
	}
	return n.Value, true
}

// boolean reads a true or false node.
func (d *decoder) boolean(n *yaml.Node, path string) (bool, bool) {
	if n.Kind != yaml.ScalarNode || n.Tag != "!!bool" || (n.Value != "true" && n.Value != "false") {
		d.errorf(n, path, "must be true or false, got %s", describe(n))
		return false, false
	}
	return n.Value == "true", true
}

// duration reads a duration string ("30s", "1h30m") within lo..hi; lo is
// exclusive when it is 0 (durations must be positive).
func (d *decoder) duration(n *yaml.Node, path string, lo, hi time.Duration) (time.Duration, bool) {
	want := fmt.Sprintf("a duration such as \"30s\" or \"1h30m\", more than 0 and at most %s", human(hi))
	if lo > 0 {
		want = fmt.Sprintf("a duration such as \"30s\" or \"1h30m\", %s to %s", human(lo), human(hi))
	}
	if n.Kind != yaml.ScalarNode || n.Tag != "!!str" {
		d.errorf(n, path, "must be %s (a string), got %s", want, describe(n))
		return 0, false
	}
	v, err := time.ParseDuration(n.Value)
	if err != nil || v <= 0 || v < lo || v > hi {
		d.errorf(n, path, "must be %s, got %q", want, n.Value)
		return 0, false
	}
	return v, true
}

// human writes a bound of a duration in days when it is whole days.
func human(d time.Duration) string {
	if d >= 24*time.Hour && d%(24*time.Hour) == 0 {
		return fmt.Sprintf("%dd (%s)", d/(24*time.Hour), d)
	}
	return d.String()
}

// maxInt is the largest count a field takes when the runtime sets no bound.
const maxInt = math.MaxInt32
