package config_test

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/leatdev/leat/config"
	"github.com/leatdev/leat/stream"
	"github.com/leatdev/leat/task"
)

const full = `version: 1
app: shop
streams:
  orders:
    partitions: 32
    key: customer
    retention: 1000
    codec: json+zstd
    when_full: refuse
queues:
  inference:
    concurrency: 4
    timeout: 2m
    retries: 3
    backoff: {min: 2s, max: 1m}
    visibility: 10s
    retention: 48h
    dead: {max: 50, age: 72h}
    grace: 20s
    rate: {limit: 100, per: 1s}
    levels:
      - {name: premium, weight: 6}
      - {name: standard, weight: 3}
      - {name: default, weight: 1}
    unique: 10m
    webhook: {attempts: 3, backoff: 1s}
    cron:
      - name: nightly
        schedule: "0 3 * * *"
        payload: {text: "a b", n: 2, ok: true, f: 1.5, none: null, list: [1, "x"]}
        level: premium
        start: "2027-01-01T00:00:00Z"
        end: "2027-06-30T00:00:00Z"
        times: 12
    handler:
      exec:
        command: python3 handler.py
        dir: handlers
        env: [HF_HOME, MODEL=small]
        start_timeout: 1m
        max_tasks_per_process: 100
  words:
`

// TestParseFull: every field of a file is read into its setting, and a
// queue given no settings has the task package's defaults.
// events: turns a queue's events on with its cap (task.Events); a queue
// without it leaves them as they are.
func TestParseEvents(t *testing.T) {
	f, err := config.Parse("leat.yaml", []byte("queues:\n  loud:\n    events: 500\n  quiet:\n    retries: 1\n"))
	if err != nil {
		t.Fatal(err)
	}
	if len(f.Queues) != 2 || f.Queues[0].Events != 500 || f.Queues[1].Events != 0 {
		t.Fatalf("queues %+v", f.Queues)
	}
}

// A WebAssembly handler: the module alone, or with its sandbox.
func TestParseWasmHandler(t *testing.T) {
	f, err := config.Parse("/srv/app/leat.yaml", []byte(`queues:
  short:
    handler:
      wasm: lines
  full:
    handler:
      wasm:
        module: reactor
        memory_pages: 512
        dir: data
        read_only: true
        env: {MODE: fast}
        deterministic: true
        pool: true
`))
	if err != nil {
		t.Fatal(err)
	}
	if h := f.Queue("short").Handler; h.Kind != config.WasmHandler || !reflect.DeepEqual(*h.Wasm, config.Wasm{Module: "lines"}) || f.WasmDir(h.Wasm) != "" {
		t.Fatalf("short form: %+v %+v", h, h.Wasm)
	}
	w := f.Queue("full").Handler.Wasm
	if w.Module != "reactor" || w.MemoryPages != 512 || !w.ReadOnly || !w.Deterministic || !w.Pool ||
		strings.Join(w.Env, " ") != "MODE=fast" || f.WasmDir(w) != "/srv/app/data" {
		t.Fatalf("full form: %+v", w)
	}
}

func TestParseFull(t *testing.T) {
	f, err := config.Parse("leat.yaml", []byte(full))
	if err != nil {
		t.Fatal(err)
	}
	if f.App != "shop" || len(f.Streams) != 1 || len(f.Queues) != 2 {
		t.Fatalf("file %+v", f)
	}
	s := f.Streams[0]
	if s != (config.Stream{Name: "orders", Partitions: 32, KeyField: "customer", Retention: 1000, Codec: "json+zstd", WhenFull: stream.Refuse}) {
		t.Fatalf("stream %+v", s)
	}
	q := f.Queue("inference")
	if q.Concurrency != 4 || q.Timeout != 2*time.Minute || q.Retries != 3 || q.BackoffMin != 2*time.Second ||
		q.BackoffMax != time.Minute || q.Visibility != 10*time.Second || q.Retention != 48*time.Hour ||
		q.DeadMax != 50 || q.DeadAge != 72*time.Hour || q.Grace != 20*time.Second ||
		q.Rate != (config.Rate{Limit: 100, Per: time.Second}) || !q.Weighted || len(q.Levels) != 3 ||
		q.Levels[0] != (task.Level{Name: "premium", Weight: 6}) || q.UniqueTTL != 10*time.Minute ||
		q.WebhookAttempts != 3 || q.WebhookBackoff != time.Second {
		t.Fatalf("queue %+v", q)
	}
	if len(q.Cron) != 1 || q.Cron[0].Level != "premium" || q.Cron[0].Times != 12 ||
		!q.Cron[0].Start.Equal(time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC)) || !q.Cron[0].End.Equal(time.Date(2027, 6, 30, 0, 0, 0, 0, time.UTC)) ||
		string(q.Cron[0].Payload) != `{"f":1.5,"list":[1,"x"],"n":2,"none":null,"ok":true,"text":"a b"}` {
		t.Fatalf("cron %+v (%s)", q.Cron, q.Cron[0].Payload)
	}
	x := q.Handler.Exec
	if q.Handler.Kind != config.ExecHandler || x.Command != "python3 handler.py" || x.Dir != "handlers" ||
		strings.Join(x.Env, " ") != "HF_HOME MODEL=small" || x.StartTimeout != time.Minute || x.MaxTasksPerProcess != 100 {
		t.Fatalf("handler %+v %+v", q.Handler, x)
	}
	if f.Dir(x) != "handlers" || f.Line("queues.inference.retries") != 14 {
		t.Fatalf("dir %q, line %d", f.Dir(x), f.Line("queues.inference.retries"))
	}
	d := f.Queue("words").Definition()
	want, _ := task.NewDefinition("words")
	if d.Concurrency != want.Concurrency || d.MaxRetries != task.DefaultMaxRetries || d.Levels[0].Name != task.DefaultPriority {
		t.Fatalf("defaults %+v", d)
	}
}

// TestParseRefuses: each mistake is reported with its line and field path,
// every one of a file at once, and nothing is coerced.
func TestParseRefuses(t *testing.T) {
	for _, c := range []struct {
		name, yaml string
		want       []string
	}{
		{"three mistakes", "app: shop\nqueues:\n  words:\n    retries: \"3x\"\n    timeout: 30\n    concurency: 4\n", []string{
			`leat.yaml:4: queues.words.retries: must be an integer 0..10000, got "3x"`,
			`leat.yaml:5: queues.words.timeout: must be a duration such as "30s" or "1h30m", more than 0 and at most 7d (168h0m0s) (a string), got 30`,
			`leat.yaml:6: queues.words.concurency: unknown field (known: backoff, concurrency, cron, dead, events, grace, handler, key_concurrency, key_rate, keyed, levels, max_key_backlog, rate, retention, retries, timeout, unique, visibility, webhook)`,
		}},
		{"events", "queues:\n  q:\n    events: 0\n  r:\n    events: 20000000\n", []string{
			`leat.yaml:3: queues.q.events: must be an integer 1..10000000, got 0`,
			`leat.yaml:5: queues.r.events: must be an integer 1..10000000, got 20000000`,
		}},
		{"string count", "queues:\n  q:\n    concurrency: \"8\"\n", []string{`leat.yaml:3: queues.q.concurrency: must be an integer 1..2147483647, got "8"`}},
		{"float count", "queues:\n  q:\n    concurrency: 8.5\n", []string{`leat.yaml:3: queues.q.concurrency: must be an integer 1..2147483647, got 8.5`}},
		{"count out of range", "queues:\n  q:\n    retries: 10001\n", []string{`leat.yaml:3: queues.q.retries: must be an integer 0..10000, got 10001`}},
		{"duration out of range", "queues:\n  q:\n    timeout: 8d\n", []string{`leat.yaml:3: queues.q.timeout: must be a duration such as "30s" or "1h30m", more than 0 and at most 7d (168h0m0s), got "8d"`}},
		{"negative duration", "queues:\n  q:\n    retention: -1h\n", []string{`queues.q.retention: must be a duration`}},
		{"visibility", "queues:\n  q:\n    visibility: 100ms\n", []string{`leat.yaml:3: queues.q.visibility: must be a duration such as "30s" or "1h30m", 300ms to 365d (8760h0m0s), got "100ms"`}},
		{"yes for a flag", "queues:\n  q:\n    keyed: yes\n", []string{`leat.yaml:3: queues.q.keyed: must be true or false, got "yes"`}},
		{"twice", "queues:\n  q:\n    retries: 1\n    retries: 2\n", []string{`leat.yaml:4: queues.q.retries: given twice (also at line 3)`}},
		{"unknown top", "apps: shop\n", []string{`leat.yaml:1: apps: unknown field (known: app, queues, streams, version)`}},
		{"stream without key", "streams:\n  s:\n    partitions: 0\n", []string{
			`leat.yaml:3: streams.s.partitions: must be an integer 1..65536, got 0`,
			`leat.yaml:3: streams.s.key: missing: the record field holding the partition key`,
		}},
		{"codec", "streams:\n  s:\n    key: k\n    codec: avro\n", []string{`leat.yaml:4: streams.s.codec: unknown codec "avro"`}},
		{"keyed levels", "queues:\n  q:\n    keyed: true\n    levels: [a, b]\n", []string{`leat.yaml:4: queues.q.levels: a keyed queue has one priority level`}},
		{"key rate unkeyed", "queues:\n  q:\n    key_rate: {limit: 1, per: 1s}\n", []string{`leat.yaml:3: queues.q.key_rate: needs a keyed queue`}},
		{"key settings unkeyed", "queues:\n  q:\n    key_concurrency: 2\n    max_key_backlog: 10\n", []string{
			`leat.yaml:3: queues.q.key_concurrency: needs a keyed queue`, `leat.yaml:4: queues.q.max_key_backlog: needs a keyed queue`,
		}},
		{"key settings out of range", "queues:\n  q:\n    keyed: true\n    key_concurrency: 0\n    max_key_backlog: -1\n  r:\n    keyed: true\n    key_concurrency: 257\n    max_key_backlog: \"9\"\n", []string{
			`leat.yaml:4: queues.q.key_concurrency: must be an integer 1..256, got 0`, `leat.yaml:5: queues.q.max_key_backlog: must be an integer 1..1000000000, got -1`,
			`leat.yaml:8: queues.r.key_concurrency: must be an integer 1..256, got 257`, `leat.yaml:9: queues.r.max_key_backlog: must be an integer 1..1000000000, got "9"`,
		}},
		{"mixed levels", "queues:\n  q:\n    levels: [a, {name: b, weight: 1}]\n", []string{`queues.q.levels[1]: levels are all names or all {name, weight}`}},
		{"level with a dot", "queues:\n  q:\n    levels: [a.b]\n", []string{`queues.q.levels[0]: level name "a.b" is invalid`}},
		{"backoff", "queues:\n  q:\n    backoff: {min: 1m, max: 1s}\n", []string{`leat.yaml:3: queues.q.backoff: max 1s is below min 1m0s`}},
		{"cron", "queues:\n  q:\n    cron:\n      - name: n\n        schedule: \"61 * * * *\"\n        level: gold\n", []string{
			`leat.yaml:5: queues.q.cron[0].schedule: "61 * * * *"`, `leat.yaml:6: queues.q.cron[0].level: unknown level "gold" (levels: default)`,
		}},
		{"cron limits", "queues:\n  q:\n    cron:\n      - name: n\n        schedule: \"@hourly\"\n        start: tomorrow\n        times: 0\n      - name: m\n        schedule: \"@hourly\"\n        start: \"2027-02-01T00:00:00Z\"\n        end: \"2027-01-01T00:00:00Z\"\n", []string{
			`leat.yaml:6: queues.q.cron[0].start: "tomorrow": want an RFC 3339 time`, `leat.yaml:7: queues.q.cron[0].times: must be an integer 1..1099511627776, got 0`,
			`leat.yaml:11: queues.q.cron[1].end: 2027-01-01T00:00:00Z is before start 2027-02-01T00:00:00Z`,
		}},
		{"handler kind", "queues:\n  q:\n    handler:\n      lua: x\n", []string{`leat.yaml:4: queues.q.handler.lua: unknown field (known: exec, wasm)`}},
		{"wasm handler", "queues:\n  q:\n    handler:\n      wasm:\n        memory_pages: \"8\"\n        read_only: true\n        pool: 1\n", []string{
			`leat.yaml:5: queues.q.handler.wasm.module: missing: the name of a module stored with leat wasm put`,
			`leat.yaml:5: queues.q.handler.wasm.memory_pages: must be an integer 1..65536, got "8"`,
			`leat.yaml:6: queues.q.handler.wasm.read_only: goes with dir`,
			`leat.yaml:7: queues.q.handler.wasm.pool: must be`,
		}},
		{"wasm module name", "queues:\n  q:\n    handler:\n      wasm: \"a b\"\n", []string{`leat.yaml:4: queues.q.handler.wasm: wasm module name "a b" is invalid`}},
		{"handler env", "queues:\n  q:\n    handler:\n      exec:\n        command: x\n        env: [LEAT_REDIS_URL, \"1X=2\"]\n", []string{
			`queues.q.handler.exec.env[0]: LEAT_REDIS_URL: leat's own variables are not passed on`, `queues.q.handler.exec.env[1]: "1X" is not a variable name`,
		}},
		{"max tasks per process", "queues:\n  q:\n    handler:\n      exec: {command: x, max_tasks_per_process: -1}\n  r:\n    handler:\n      exec: {command: x, max_tasks_per_process: \"5\"}\n", []string{
			`leat.yaml:4: queues.q.handler.exec.max_tasks_per_process: must be an integer 0..1000000000, got -1`,
			`leat.yaml:7: queues.r.handler.exec.max_tasks_per_process: must be an integer 0..1000000000, got "5"`,
		}},
		{"env number", "queues:\n  q:\n    handler:\n      exec:\n        command: x\n        env: {N: 8}\n", []string{`queues.q.handler.exec.env.N: must be a string (quote numbers and booleans), got 8`}},
		{"alias", "queues:\n  q: &a\n    retries: 1\n  r: *a\n", []string{`queues.r: anchors, aliases and merge keys are not supported`}},
		{"bad name", "queues:\n  \"a b\":\n    retries: 1\n", []string{`queues.a b: task queue name "a b" is invalid`}},
		{"two documents", "app: a\n---\napp: b\n", []string{`more than one YAML document`}},
		{"not yaml", "app: [\n", []string{`leat.yaml: not YAML`}},
		{"empty", "", []string{`leat.yaml: empty file`}},
		{"version", "version: 2\n", []string{`leat.yaml:1: version: must be an integer 1..1, got 2`}},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := config.Parse("leat.yaml", []byte(c.yaml))
			var errs config.Errors
			if err == nil {
				t.Fatal("accepted")
			}
			errs, _ = err.(config.Errors)
			if len(errs) != len(c.want) {
				t.Fatalf("%d errors, want %d:\n%v", len(errs), len(c.want), err)
			}
			for i, w := range c.want {
				if !strings.Contains(errs[i].Error(), w) {
					t.Errorf("error %d:\n%s\nwant it to contain\n%s", i, errs[i], w)
				}
			}
		})
	}
}

// FuzzParse: Parse never panics, and a file it accepts gives definitions
// the task package accepts.
func FuzzParse(f *testing.F) {
	f.Add([]byte(full))
	f.Add([]byte("queues:\n  q:\n    levels: [a, b]\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		file, err := config.Parse("f", b)
		if err != nil {
			return
		}
		for i := range file.Queues {
			_ = file.Queues[i].Definition()
		}
	})
}
