package config

import (
	"fmt"
	"regexp"
	"sort"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// handler reads a queue's handler: one kind, with its settings.
func (d *decoder) handler(n *yaml.Node, path string) Handler {
	m, order, ok := d.mapping(n, path, []string{string(ExecHandler)})
	if !ok {
		return Handler{}
	}
	if len(order) != 1 {
		if len(n.Content) != 2 { // not one unknown kind, reported already
			d.errorf(n, path, "give one handler kind (exec)")
		}
		return Handler{}
	}
	e := m["exec"]
	p := join(path, "exec")
	fields, _, ok := d.mapping(e.value, p, []string{"command", "dir", "env", "inherit_env", "start_timeout"})
	if !ok {
		return Handler{}
	}
	x := &Exec{}
	if c, ok := fields["command"]; !ok {
		d.errorf(e.value, join(p, "command"), "missing: the command running the handler, such as \"python3 handler.py\"")
	} else {
		x.Command, _ = d.str(c.value, join(p, "command"))
	}
	if c, ok := fields["dir"]; ok {
		x.Dir, _ = d.str(c.value, join(p, "dir"))
	}
	if c, ok := fields["env"]; ok {
		x.Env = d.env(c.value, join(p, "env"))
	}
	if c, ok := fields["inherit_env"]; ok {
		x.InheritEnv, _ = d.boolean(c.value, join(p, "inherit_env"))
	}
	if c, ok := fields["start_timeout"]; ok {
		x.StartTimeout, _ = d.duration(c.value, join(p, "start_timeout"), 0, time.Hour)
	}
	return Handler{Kind: ExecHandler, Exec: x}
}

var envNameRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// env reads a handler's environment: a list of NAME=VALUE and NAME, or a
// mapping of NAME: VALUE (strings), sorted by name.
func (d *decoder) env(n *yaml.Node, path string) []string {
	var out []string
	check := func(at *yaml.Node, p, name string, set bool) bool {
		switch {
		case !envNameRE.MatchString(name):
			d.errorf(at, p, "%q is not a variable name", name)
			return false
		case !set && strings.HasPrefix(name, "LEAT_"):
			d.errorf(at, p, "%s: leat's own variables are not passed on to handlers (set a value with NAME: VALUE)", name)
			return false
		}
		return true
	}
	switch n.Kind {
	case yaml.SequenceNode:
		for i, c := range n.Content {
			p := fmt.Sprintf("%s[%d]", path, i)
			v, ok := d.str(c, p)
			if !ok {
				continue
			}
			name, _, set := strings.Cut(v, "=")
			if check(c, p, name, set) {
				out = append(out, v)
			}
		}
	case yaml.MappingNode:
		m, order, ok := d.mapping(n, path, nil)
		if !ok {
			return nil
		}
		for _, k := range order {
			p := join(path, k)
			v := m[k].value
			if v.Kind != yaml.ScalarNode || v.Tag != "!!str" {
				d.errorf(v, p, "must be a string (quote numbers and booleans), got %s", describe(v))
				continue
			}
			if check(m[k].key, p, k, true) {
				out = append(out, k+"="+v.Value)
			}
		}
		sort.Strings(out)
	default:
		d.errorf(n, path, "must be a list of NAME=VALUE or NAME (passed on from the worker), or a mapping NAME: VALUE, got %s", describe(n))
	}
	return out
}
