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
	m, order, ok := d.mapping(n, path, []string{string(ExecHandler), string(WasmHandler)})
	if !ok {
		return Handler{}
	}
	if len(order) != 1 {
		if len(n.Content) != 2 { // not one unknown kind, reported already
			d.errorf(n, path, "give one handler kind (exec or wasm)")
		}
		return Handler{}
	}
	if w, ok := m["wasm"]; ok {
		return d.wasm(w.value, join(path, "wasm"))
	}
	e := m["exec"]
	p := join(path, "exec")
	fields, _, ok := d.mapping(e.value, p, []string{"command", "dir", "env", "inherit_env", "start_timeout", "max_tasks_per_process"})
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
	if c, ok := fields["max_tasks_per_process"]; ok {
		x.MaxTasksPerProcess, _ = d.count(c.value, join(p, "max_tasks_per_process"), 0, maxTasksPerProcess)
	}
	return Handler{Kind: ExecHandler, Exec: x}
}

// maxTasksPerProcess bounds a handler's max_tasks_per_process.
const maxTasksPerProcess = 1_000_000_000

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

// maxMemoryPages is the most a 32-bit WebAssembly memory has: 4 GiB.
const maxMemoryPages = 65536

// wasm reads a WebAssembly handler: the module's name alone, or a mapping
// of its settings.
func (d *decoder) wasm(n *yaml.Node, path string) Handler {
	w := &Wasm{}
	if n.Kind == yaml.ScalarNode {
		name, ok := d.name(n, path, "wasm module")
		if !ok {
			return Handler{}
		}
		w.Module = name
		return Handler{Kind: WasmHandler, Wasm: w}
	}
	fields, _, ok := d.mapping(n, path, []string{"module", "memory_pages", "dir", "read_only", "env", "deterministic", "pool"})
	if !ok {
		return Handler{}
	}
	if c, ok := fields["module"]; !ok {
		d.errorf(n, join(path, "module"), "missing: the name of a module stored with leat wasm put")
	} else {
		w.Module, _ = d.name(c.value, join(path, "module"), "wasm module")
	}
	if c, ok := fields["memory_pages"]; ok {
		v, _ := d.integer(c.value, join(path, "memory_pages"), 1, maxMemoryPages)
		w.MemoryPages = uint32(v)
	}
	if c, ok := fields["dir"]; ok {
		w.Dir, _ = d.str(c.value, join(path, "dir"))
	}
	if c, ok := fields["read_only"]; ok {
		w.ReadOnly, _ = d.boolean(c.value, join(path, "read_only"))
		if _, dir := fields["dir"]; !dir {
			d.errorf(c.key, join(path, "read_only"), "goes with dir: the directory the module may read")
		}
	}
	if c, ok := fields["env"]; ok {
		w.Env = d.env(c.value, join(path, "env"))
	}
	if c, ok := fields["deterministic"]; ok {
		w.Deterministic, _ = d.boolean(c.value, join(path, "deterministic"))
	}
	if c, ok := fields["pool"]; ok {
		w.Pool, _ = d.boolean(c.value, join(path, "pool"))
	}
	return Handler{Kind: WasmHandler, Wasm: w}
}
