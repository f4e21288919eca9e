package config

import (
	"fmt"
	"regexp"
	"sort"
	"strings"
	"time"

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
	"rate", "key_rate", "keyed", "levels", "unique", "webhook", "cron", "handler", "events",
	"key_concurrency", "max_key_backlog",
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
	if e, ok := fields["key_concurrency"]; ok {
		q.KeyConcurrency, _ = d.count(e.value, at("key_concurrency"), 1, task.MaxKeyConcurrencyLimit)
		if q.KeyConcurrency > 1 && !q.Keyed {
			d.errorf(e.value, at("key_concurrency"), "needs a keyed queue (keyed: true)")
		}
	}
	if e, ok := fields["max_key_backlog"]; ok {
		q.MaxKeyBacklog, _ = d.count(e.value, at("max_key_backlog"), 1, task.MaxKeyBacklogLimit)
		if q.MaxKeyBacklog > 0 && !q.Keyed {
			d.errorf(e.value, at("max_key_backlog"), "needs a keyed queue (keyed: true)")
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
	if e, ok := fields["events"]; ok {
		q.Events, _ = d.count(e.value, at("events"), 1, task.MaxEventsCap)
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

// sortErrors orders errors by line, keeping the order of those of a line.
func sortErrors(es Errors) {
	sort.SliceStable(es, func(i, j int) bool { return es[i].Line < es[j].Line })
}
