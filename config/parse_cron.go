package config

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/leatdev/leat/internal/schedule"
	"github.com/leatdev/leat/task"
	"go.yaml.in/yaml/v3"
)

// crons reads a queue's schedules.
func (d *decoder) crons(n *yaml.Node, path string, q *Queue) []Cron {
	if n.Kind != yaml.SequenceNode {
		d.errorf(n, path, "must be a list of schedules {name, schedule, payload}, got %s", describe(n))
		return nil
	}
	var out []Cron
	seen := map[string]bool{}
	for i, c := range n.Content {
		p := fmt.Sprintf("%s[%d]", path, i)
		m, _, ok := d.mapping(c, p, []string{"name", "schedule", "payload", "level", "key", "start", "end", "times"})
		if !ok {
			continue
		}
		var cr Cron
		if e, ok := m["name"]; !ok {
			d.errorf(c, join(p, "name"), "missing")
		} else if cr.Name, ok = d.name(e.value, join(p, "name"), "cron schedule"); ok {
			if seen[cr.Name] {
				d.errorf(e.value, join(p, "name"), "schedule %q given twice", cr.Name)
			}
			seen[cr.Name] = true
		}
		if e, ok := m["schedule"]; !ok {
			d.errorf(c, join(p, "schedule"), "missing: a cron expression (\"0 3 * * *\") or \"@every 10m\"")
		} else if cr.Schedule, ok = d.str(e.value, join(p, "schedule")); ok {
			if _, err := schedule.Parse(cr.Schedule); err != nil {
				d.errorf(e.value, join(p, "schedule"), "%q: %v", cr.Schedule, err)
			}
		}
		cr.Payload = json.RawMessage("null")
		if e, ok := m["payload"]; ok {
			if v, ok := d.json(e.value, join(p, "payload")); ok {
				b, err := json.Marshal(v)
				if err != nil {
					d.errorf(e.value, join(p, "payload"), "%v", err)
				}
				cr.Payload = b
			}
		}
		if e, ok := m["level"]; ok {
			if cr.Level, ok = d.level(e.value, join(p, "level")); ok && !hasLevel(q.Levels, cr.Level) {
				d.errorf(e.value, join(p, "level"), "unknown level %q (levels: %s)", cr.Level, strings.Join(levelNames(q.Levels), ", "))
			}
		}
		if e, ok := m["key"]; ok {
			cr.Key, _ = d.str(e.value, join(p, "key"))
		}
		for _, f := range []struct {
			name string
			at   *time.Time
		}{{"start", &cr.Start}, {"end", &cr.End}} {
			if e, ok := m[f.name]; ok {
				if s, ok := d.str(e.value, join(p, f.name)); ok {
					t, err := time.Parse(time.RFC3339, s)
					if err != nil {
						d.errorf(e.value, join(p, f.name), "%q: want an RFC 3339 time (\"2027-01-01T00:00:00Z\")", s)
					}
					*f.at = t
				}
			}
		}
		if !cr.Start.IsZero() && !cr.End.IsZero() && cr.End.Before(cr.Start) {
			d.errorf(m["end"].value, join(p, "end"), "%s is before start %s", cr.End.Format(time.RFC3339), cr.Start.Format(time.RFC3339))
		}
		if e, ok := m["times"]; ok {
			cr.Times, _ = d.integer(e.value, join(p, "times"), 1, 1<<40)
		}
		switch {
		case q.Keyed && cr.Key == "":
			d.errorf(c, join(p, "key"), "missing: the tasks of a keyed queue need a key")
		case !q.Keyed && cr.Key != "":
			d.errorf(m["key"].value, join(p, "key"), "the queue is not keyed (keyed: true)")
		}
		out = append(out, cr)
	}
	return out
}

func hasLevel(levels []task.Level, name string) bool {
	for _, l := range levels {
		if l.Name == name {
			return true
		}
	}
	return false
}

func levelNames(levels []task.Level) []string {
	out := make([]string, len(levels))
	for i, l := range levels {
		out[i] = l.Name
	}
	return out
}

// json returns the value of a node as JSON would hold it: mappings with
// string keys, lists, strings, integers, floats, booleans and null.
func (d *decoder) json(n *yaml.Node, path string) (any, bool) {
	switch n.Kind {
	case yaml.MappingNode:
		m, order, ok := d.mapping(n, path, nil)
		if !ok {
			return nil, false
		}
		out := map[string]any{}
		all := true
		for _, k := range order {
			v, ok := d.json(m[k].value, join(path, k))
			all = all && ok
			out[k] = v
		}
		return out, all
	case yaml.SequenceNode:
		out := make([]any, len(n.Content))
		all := true
		for i, c := range n.Content {
			v, ok := d.json(c, fmt.Sprintf("%s[%d]", path, i))
			all = all && ok
			out[i] = v
		}
		return out, all
	case yaml.ScalarNode:
		switch n.Tag {
		case "!!str":
			return n.Value, true
		case "!!null":
			return nil, true
		case "!!bool", "!!int", "!!float":
			var v any
			if err := n.Decode(&v); err != nil {
				d.errorf(n, path, "%v", err)
				return nil, false
			}
			if f, ok := v.(float64); ok && (f != f || f > 1e308 || f < -1e308) {
				d.errorf(n, path, "%s has no JSON form", n.Value)
				return nil, false
			}
			return v, true
		}
		d.errorf(n, path, "a value of type %s has no JSON form", n.Tag)
		return nil, false
	}
	d.errorf(n, path, "anchors and aliases are not supported: write the value out")
	return nil, false
}
