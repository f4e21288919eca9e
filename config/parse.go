package config

import (
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/leatdev/leat/internal/schedule"
	"github.com/leatdev/leat/stream"
	"github.com/leatdev/leat/task"
	"go.yaml.in/yaml/v3"
)

// nameRE is what names of apps, streams, queues, levels and schedules may
// be (the runtime's rule for names in Redis keys).
var nameRE = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,128}$`)

// levelRE is what a priority level's name may be: a queue address
// "queue.level" ends at its last dot, so a level has none.
var levelRE = regexp.MustCompile(`^[A-Za-z0-9_-]{1,128}$`)

func (d *decoder) name(n *yaml.Node, path, what string) (string, bool) {
	if n.Kind != yaml.ScalarNode || n.Tag != "!!str" || !nameRE.MatchString(n.Value) {
		d.errorf(n, path, "%s name %s is invalid: use 1 to 128 letters, digits, '_', '.' or '-'", what, describe(n))
		return "", false
	}
	return n.Value, true
}

// mark records the line of path.
func (d *decoder) mark(f *File, path string, e entry) { f.lines[path] = e.key.Line }

func (d *decoder) top(f *File, root *yaml.Node) {
	fields, _, ok := d.mapping(root, "", []string{"version", "app", "streams", "queues"})
	if !ok {
		return
	}
	if e, ok := fields["version"]; ok {
		if v, ok := d.integer(e.value, "version", Version, Version); ok && v != Version {
			d.errorf(e.value, "version", "unknown version %d (this leat reads %d)", v, Version)
		}
	}
	if e, ok := fields["app"]; ok {
		d.mark(f, "app", e)
		f.App, _ = d.name(e.value, "app", "app")
	}
	if e, ok := fields["streams"]; ok {
		m, order, ok := d.mapping(e.value, "streams", nil)
		if ok {
			for _, name := range order {
				p := join("streams", name)
				d.mark(f, p, m[name])
				if _, ok := d.name(m[name].key, p, "stream"); !ok {
					continue
				}
				if s, ok := d.stream(f, p, name, m[name].value); ok {
					f.Streams = append(f.Streams, s)
				}
			}
		}
	}
	if e, ok := fields["queues"]; ok {
		m, order, ok := d.mapping(e.value, "queues", nil)
		if ok {
			for _, name := range order {
				p := join("queues", name)
				d.mark(f, p, m[name])
				if _, ok := d.name(m[name].key, p, "task queue"); !ok {
					continue
				}
				if q, ok := d.queue(f, p, name, m[name].value); ok {
					f.Queues = append(f.Queues, q)
				}
			}
		}
	}
}

func (d *decoder) stream(f *File, path, name string, n *yaml.Node) (Stream, bool) {
	s := Stream{Name: name, Partitions: stream.DefaultPartitions, Retention: stream.DefaultSize, Codec: "msgpack"}
	fields, _, ok := d.mapping(n, path, []string{"partitions", "key", "retention", "codec", "when_full"})
	if !ok {
		return s, false
	}
	before := len(d.errs)
	for k, e := range fields {
		d.mark(f, join(path, k), e)
	}
	if e, ok := fields["partitions"]; ok {
		s.Partitions, _ = d.count(e.value, join(path, "partitions"), 1, 65536)
	}
	if e, ok := fields["key"]; ok {
		s.KeyField, _ = d.str(e.value, join(path, "key"))
	} else {
		d.errorf(n, join(path, "key"), "missing: the record field holding the partition key (a stream declared in a file is routed by a field)")
	}
	if e, ok := fields["retention"]; ok {
		s.Retention, _ = d.integer(e.value, join(path, "retention"), 1, 1<<40)
	}
	if e, ok := fields["codec"]; ok {
		if c, ok := d.str(e.value, join(path, "codec")); ok {
			if !validCodec(c) {
				d.errorf(e.value, join(path, "codec"), "unknown codec %q (want msgpack or json, optionally with +gzip or +zstd)", c)
			}
			s.Codec = c
		}
	}
	if e, ok := fields["when_full"]; ok {
		if v, ok := d.str(e.value, join(path, "when_full")); ok {
			switch v {
			case "trim":
				s.WhenFull = stream.Trim
			case "refuse":
				s.WhenFull = stream.Refuse
			case "wait":
				s.WhenFull = stream.Wait
			default:
				d.errorf(e.value, join(path, "when_full"), "must be trim, refuse or wait, got %q", v)
			}
		}
	}
	return s, len(d.errs) == before
}

// validCodec reports whether c names a built-in codec.
func validCodec(c string) bool {
	base, comp, hasComp := strings.Cut(c, "+")
	if base != "msgpack" && base != "json" {
		return false
	}
	return !hasComp || comp == "gzip" || comp == "zstd"
}

// Bounds of settings the task package has no constant for.
const (
	minVisibility = 300 * time.Millisecond
	maxDuration   = 365 * 24 * time.Hour // any other duration of a queue
)

var queueKeys = []string{
	"concurrency", "timeout", "retries", "backoff", "visibility", "retention", "dead", "grace",
	"rate", "key_rate", "keyed", "levels", "unique", "webhook", "cron", "handler",
}

func (d *decoder) queue(f *File, path, name string, n *yaml.Node) (Queue, bool) {
	q := Queue{
		Name: name, Concurrency: task.DefaultConcurrency, Timeout: task.DefaultTimeout, Retries: task.DefaultMaxRetries,
		BackoffMin: task.DefaultBackoffMin, BackoffMax: task.DefaultBackoffMax, Visibility: task.DefaultVisibility,
		Retention: task.DefaultRetention, DeadMax: task.DefaultDeadMax, DeadAge: task.DefaultDeadAge, Grace: task.DefaultGrace,
		Levels: []task.Level{{Name: task.DefaultPriority, Weight: 1}}, WebhookAttempts: task.DefaultWebhookAttempts,
		WebhookBackoff: task.DefaultWebhookBackoff,
	}
	if n.Kind == yaml.ScalarNode && n.Tag == "!!null" {
		return q, true // "words:" alone: every default
	}
	fields, _, ok := d.mapping(n, path, queueKeys)
	if !ok {
		return q, false
	}
	before := len(d.errs)
	for k, e := range fields {
		d.mark(f, join(path, k), e)
	}
	at := func(k string) string { return join(path, k) }
	if e, ok := fields["concurrency"]; ok {
		q.Concurrency, _ = d.count(e.value, at("concurrency"), 1, maxInt)
	}
	if e, ok := fields["timeout"]; ok {
		q.Timeout, _ = d.duration(e.value, at("timeout"), 0, task.MaxTimeoutLimit)
	}
	if e, ok := fields["retries"]; ok {
		q.Retries, _ = d.count(e.value, at("retries"), 0, task.MaxRetriesLimit)
	}
	if e, ok := fields["backoff"]; ok {
		if m, _, ok := d.mapping(e.value, at("backoff"), []string{"min", "max"}); ok {
			if v, ok := m["min"]; ok {
				q.BackoffMin, _ = d.duration(v.value, at("backoff.min"), 0, maxDuration)
			}
			if v, ok := m["max"]; ok {
				q.BackoffMax, _ = d.duration(v.value, at("backoff.max"), 0, maxDuration)
			}
			if q.BackoffMax < q.BackoffMin {
				d.errorf(e.value, at("backoff"), "max %s is below min %s", q.BackoffMax, q.BackoffMin)
			}
		}
	}
	if e, ok := fields["visibility"]; ok {
		q.Visibility, _ = d.duration(e.value, at("visibility"), minVisibility, maxDuration)
	}
	if e, ok := fields["retention"]; ok {
		q.Retention, _ = d.duration(e.value, at("retention"), 0, task.MaxRetentionLimit)
	}
	if e, ok := fields["dead"]; ok {
		if m, _, ok := d.mapping(e.value, at("dead"), []string{"max", "age"}); ok {
			if v, ok := m["max"]; ok {
				q.DeadMax, _ = d.count(v.value, at("dead.max"), 1, maxInt)
			}
			if v, ok := m["age"]; ok {
				q.DeadAge, _ = d.duration(v.value, at("dead.age"), 0, maxDuration)
			}
		}
	}
	if e, ok := fields["grace"]; ok {
		q.Grace, _ = d.duration(e.value, at("grace"), 0, maxDuration)
	}
	if e, ok := fields["rate"]; ok {
		q.Rate = d.rate(e.value, at("rate"))
	}
	if e, ok := fields["keyed"]; ok {
		q.Keyed, _ = d.boolean(e.value, at("keyed"))
	}
	if e, ok := fields["key_rate"]; ok {
		q.KeyRate = d.rate(e.value, at("key_rate"))
		if q.KeyRate.Limit > 0 && !q.Keyed {
			d.errorf(e.value, at("key_rate"), "needs a keyed queue (keyed: true)")
		}
	}
	if e, ok := fields["levels"]; ok {
		q.Levels, q.Weighted = d.levels(e.value, at("levels"))
		if q.Keyed && len(q.Levels) > 1 {
			d.errorf(e.value, at("levels"), "a keyed queue has one priority level")
		}
	}
	if e, ok := fields["unique"]; ok {
		q.UniqueTTL, _ = d.duration(e.value, at("unique"), 0, maxDuration)
	}
	if e, ok := fields["webhook"]; ok {
		if m, _, ok := d.mapping(e.value, at("webhook"), []string{"attempts", "backoff"}); ok {
			if v, ok := m["attempts"]; ok {
				q.WebhookAttempts, _ = d.count(v.value, at("webhook.attempts"), 1, 100)
			}
			if v, ok := m["backoff"]; ok {
				q.WebhookBackoff, _ = d.duration(v.value, at("webhook.backoff"), 0, 24*time.Hour)
			}
		}
	}
	if len(d.errs) == before {
		// Every field checked: the task package decides the rest.
		if _, err := task.NewDefinition(name, q.Options()...); err != nil {
			d.errorf(n, path, "%v", err)
		}
	}
	if e, ok := fields["cron"]; ok {
		q.Cron = d.crons(e.value, at("cron"), &q)
	}
	if e, ok := fields["handler"]; ok {
		q.Handler = d.handler(e.value, at("handler"))
	}
	return q, len(d.errs) == before
}

// rate reads {limit: N, per: DURATION}.
func (d *decoder) rate(n *yaml.Node, path string) Rate {
	m, _, ok := d.mapping(n, path, []string{"limit", "per"})
	if !ok {
		return Rate{}
	}
	var r Rate
	le, lok := m["limit"]
	pe, pok := m["per"]
	if !lok || !pok {
		d.errorf(n, path, "needs limit (tasks) and per (a duration such as \"1s\")")
		return Rate{}
	}
	r.Limit, _ = d.count(le.value, join(path, "limit"), 1, maxInt)
	r.Per, _ = d.duration(pe.value, join(path, "per"), time.Millisecond, maxDuration)
	return r
}

// levels reads a list of level names (strict priorities) or of {name,
// weight} (weighted).
func (d *decoder) levels(n *yaml.Node, path string) ([]task.Level, bool) {
	def := []task.Level{{Name: task.DefaultPriority, Weight: 1}}
	if n.Kind != yaml.SequenceNode {
		d.errorf(n, path, "must be a list of level names, highest first, or of {name, weight}, got %s", describe(n))
		return def, false
	}
	if len(n.Content) == 0 || len(n.Content) > 10 {
		d.errorf(n, path, "%d levels, want 1 to 10", len(n.Content))
		return def, false
	}
	weighted := n.Content[0].Kind == yaml.MappingNode
	var out []task.Level
	seen := map[string]bool{}
	for i, c := range n.Content {
		p := fmt.Sprintf("%s[%d]", path, i)
		l := task.Level{Weight: 1}
		if weighted {
			m, _, ok := d.mapping(c, p, []string{"name", "weight"})
			if !ok {
				continue
			}
			ne, nok := m["name"]
			we, wok := m["weight"]
			if !nok || !wok {
				d.errorf(c, p, "a weighted level needs name and weight")
				continue
			}
			l.Name, _ = d.level(ne.value, join(p, "name"))
			l.Weight, _ = d.count(we.value, join(p, "weight"), 1, 1000)
		} else {
			if c.Kind == yaml.MappingNode {
				d.errorf(c, p, "levels are all names or all {name, weight}, not both")
				continue
			}
			l.Name, _ = d.level(c, p)
		}
		if l.Name != "" && seen[l.Name] {
			d.errorf(c, p, "level %q given twice", l.Name)
		}
		seen[l.Name] = true
		out = append(out, l)
	}
	return out, weighted
}

func (d *decoder) level(n *yaml.Node, path string) (string, bool) {
	if n.Kind != yaml.ScalarNode || n.Tag != "!!str" || !levelRE.MatchString(n.Value) {
		d.errorf(n, path, "level name %s is invalid: use 1 to 128 letters, digits, '_' or '-'", describe(n))
		return "", false
	}
	return n.Value, true
}

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
		m, _, ok := d.mapping(c, p, []string{"name", "schedule", "payload", "level", "key"})
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

// sortErrors orders errors by line, keeping the order of those of a line.
func sortErrors(es Errors) {
	sort.SliceStable(es, func(i, j int) bool { return es[i].Line < es[j].Line })
}
