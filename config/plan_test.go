package config_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/leatdev/leat/app"
	"github.com/leatdev/leat/config"
	"github.com/leatdev/leat/internal/tools/redistest"
	"github.com/leatdev/leat/stream"
	"github.com/leatdev/leat/task"
	"github.com/redis/go-redis/v9"
)

func newApp(t *testing.T) (*app.App, *redis.Client, string) {
	t.Helper()
	t.Parallel()
	c, prefix := redistest.Client(t)
	a, err := app.New(app.Config{Name: "shop", Client: c, KeyPrefix: prefix, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	return a, c, prefix
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func parse(t *testing.T, s string) *config.File {
	t.Helper()
	f, err := config.Parse("leat.yaml", []byte(s))
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func plan(t *testing.T, a *app.App, f *config.File) *config.Plan {
	t.Helper()
	p, err := config.NewPlan(ctxT(t), a, f)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// registry returns every registry entry of the app.
func registry(t *testing.T, c *redis.Client, prefix string) map[string]string {
	t.Helper()
	out := map[string]string{}
	keys, err := c.Keys(context.Background(), prefix+"*").Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range keys {
		m, err := c.HGetAll(context.Background(), k).Result()
		if err != nil {
			t.Fatal(err)
		}
		for f, v := range m {
			out[k+" "+f] = v
		}
	}
	return out
}

// TestApplyExportRoundTrip: a file applied to an empty registry adds its
// stream and queues; applied again, or exported and applied, it changes
// nothing; the definitions written are those the runtime reads (a Go
// program declaring the same stream agrees, the CLI's lookup finds the
// queue's settings).
func TestApplyExportRoundTrip(t *testing.T) {
	a, c, prefix := newApp(t)
	ctx := ctxT(t)
	f := parse(t, full)
	p := plan(t, a, f)
	if len(p.Refused) > 0 || p.Empty() {
		t.Fatalf("plan %v, refused %v", p, p.Refused)
	}
	out := p.String()
	for _, want := range []string{"stream orders: added\n  partitions: 32\n", "queue inference: added\n", "  retries: 3\n",
		"  levels: [premium:6, standard:3, default:1]\n", "queue words: added\n", "0 changed, 0 unchanged\n"} {
		if !strings.Contains(out, want) {
			t.Fatalf("plan:\n%s\nwant %q", out, want)
		}
	}
	if err := p.Apply(ctx); err != nil {
		t.Fatal(err)
	}
	if again := plan(t, a, f); !again.Empty() || !strings.HasSuffix(again.String(), "0 added, 0 changed, 3 unchanged\n") {
		t.Fatalf("second plan:\n%s", again)
	}
	q, err := task.Lookup(ctx, a, "inference")
	if err != nil {
		t.Fatal(err)
	}
	if d := q.Definition(); d.MaxRetries != 3 || d.Timeout != 2*time.Minute || d.Strict || len(d.Levels) != 3 || d.UniqueTTL != 10*time.Minute {
		t.Fatalf("looked up %+v", d)
	}
	type order struct {
		Customer string `json:"customer"`
	}
	prog, _, _ := newProgram(t, c, prefix)
	if _, err := config.DeclareStream[order](prog, f, "orders"); err != nil {
		t.Fatal(err)
	}
	if err := prog.Register(ctx); err != nil {
		t.Fatalf("a program declaring the file's stream: %v", err)
	}

	b, err := config.Export(ctx, a)
	if err != nil {
		t.Fatal(err)
	}
	exported, err := config.Parse("export.yaml", b)
	if err != nil {
		t.Fatalf("%v\n%s", err, b)
	}
	if p := plan(t, a, exported); !p.Empty() || len(p.Refused) > 0 {
		t.Fatalf("the export's plan:\n%s\n%s", p, b)
	}
}

// newProgram returns another App of the same app, as a Go program would
// open it.
func newProgram(t *testing.T, c *redis.Client, prefix string) (*app.App, *redis.Client, string) {
	a, err := app.New(app.Config{Name: "shop", Client: c, KeyPrefix: prefix, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	return a, c, prefix
}

// TestApplyRefusesBreakingChanges: a partition count, key field or codec
// change of a stream, a keyed change or a level moved of a queue are
// refused with the line and the reason, and nothing of the file is
// written; allowed changes are listed with their old and new values.
func TestApplyRefusesBreakingChanges(t *testing.T) {
	a, c, prefix := newApp(t)
	ctx := ctxT(t)
	base := "app: shop\nstreams:\n  orders:\n    partitions: 16\n    key: customer\nqueues:\n  jobs:\n    levels: [high, low]\n"
	if err := plan(t, a, parse(t, base)).Apply(ctx); err != nil {
		t.Fatal(err)
	}
	before := registry(t, c, prefix)
	for _, tc := range []struct{ name, yaml, want string }{
		{"partitions", strings.Replace(base, "partitions: 16", "partitions: 32", 1),
			"leat.yaml:4: streams.orders.partitions: the registry has 16 partitions, the file 32: refused: its entries are in Redis already, and a key's new records would go to another partition"},
		{"key", strings.Replace(base, "key: customer", "key: id", 1), `leat.yaml:5: streams.orders.key: the registry routes by key field "customer", the file by key field "id": refused`},
		{"codec", strings.Replace(base, "key: customer", "key: customer\n    codec: json", 1), `leat.yaml:6: streams.orders.codec: the registry has codec "msgpack", the file "json": refused`},
		{"keyed", strings.Replace(base, "levels: [high, low]", "keyed: true", 1), "leat.yaml:8: queues.jobs.keyed: the registry's queue is keyed: false, the file's true: refused"},
		{"levels", strings.Replace(base, "[high, low]", "[low, high]", 1), "leat.yaml:8: queues.jobs.levels: the registry's levels are [high, low], the file's [low, high]: refused"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// Beside the refused change, one that alone would be written.
			f := parse(t, tc.yaml+"  more: {retries: 1}\n")
			p := plan(t, a, f)
			found := false
			for _, e := range p.Refused {
				found = found || strings.HasPrefix(e.Error(), tc.want)
			}
			if !found {
				t.Fatalf("refused %v\nwant %s", p.Refused, tc.want)
			}
			if err := p.Apply(ctx); !errors.Is(err, config.ErrRefused) {
				t.Fatalf("apply: %v", err)
			}
			if after := registry(t, c, prefix); len(after) != len(before) {
				t.Fatalf("registry changed: %v", after)
			}
		})
	}
	p := plan(t, a, parse(t, strings.Replace(base, "levels: [high, low]", "levels: [high, low, lowest]\n    retries: 2\n    timeout: 90s", 1)))
	if len(p.Refused) > 0 {
		t.Fatal(p.Refused)
	}
	want := "stream orders: unchanged\nqueue jobs: changed\n  timeout: 30m -> 1m30s\n  retries: 10 -> 2\n  levels: [high, low] -> [high, low, lowest]\n0 added, 1 changed, 1 unchanged\n"
	if p.String() != want {
		t.Fatalf("plan:\n%s\nwant:\n%s", p, want)
	}
	if err := p.Apply(ctx); err != nil {
		t.Fatal(err)
	}
	if q, err := task.Lookup(ctx, a, "jobs"); err != nil || q.Definition().MaxRetries != 2 {
		t.Fatalf("after apply: %v", err)
	}
}

// TestApplyRegistryChangedMeanwhile: when a program writes a definition
// between the plan and its application, nothing of the plan is written.
func TestApplyRegistryChangedMeanwhile(t *testing.T) {
	a, c, prefix := newApp(t)
	ctx := ctxT(t)
	p := plan(t, a, parse(t, "queues:\n  a:\n    retries: 1\n  b:\n    retries: 2\n"))
	prog, _, _ := newProgram(t, c, prefix)
	if _, err := task.Declare[json.RawMessage, json.RawMessage](prog, "b"); err != nil {
		t.Fatal(err)
	}
	if err := prog.Register(ctx); err != nil {
		t.Fatal(err)
	}
	before := registry(t, c, prefix)
	if err := p.Apply(ctx); !errors.Is(err, config.ErrChanged) || !strings.Contains(err.Error(), `queue "b"`) {
		t.Fatalf("apply: %v", err)
	}
	if after := registry(t, c, prefix); len(after) != len(before) {
		t.Fatalf("registry changed: %v", after)
	}
}

// TestExportSkipsFunctionKeyedStreams: a stream a Go program keys by a
// function is named in a comment, not declared.
func TestExportSkipsFunctionKeyedStreams(t *testing.T) {
	a, _, _ := newApp(t)
	ctx := ctxT(t)
	type rec struct{ ID int }
	if _, err := stream.Declare[rec](a, "events", stream.KeyFunc(func(r rec) int { return r.ID })); err != nil {
		t.Fatal(err)
	}
	if err := a.Register(ctx); err != nil {
		t.Fatal(err)
	}
	b, err := config.Export(ctx, a)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), "# stream events is keyed by a function of its Go program") || strings.Contains(string(b), "streams:") {
		t.Fatalf("export:\n%s", b)
	}
	if _, err := config.Parse("x", b); err != nil {
		t.Fatal(err)
	}
}

// TestApplyKeySettings: a keyed queue's key concurrency and backlog bound
// are read from the file, written to the registry (a lookup finds them),
// exported, and listed when they change.
func TestApplyKeySettings(t *testing.T) {
	a, _, _ := newApp(t)
	ctx := ctxT(t)
	f := parse(t, "app: shop\nqueues:\n  jobs:\n    keyed: true\n    key_concurrency: 4\n    max_key_backlog: 500\n")
	if q := f.Queue("jobs"); q.KeyConcurrency != 4 || q.MaxKeyBacklog != 500 {
		t.Fatalf("parsed %+v", q)
	}
	if err := plan(t, a, f).Apply(ctx); err != nil {
		t.Fatal(err)
	}
	q, err := task.Lookup(ctx, a, "jobs")
	if err != nil {
		t.Fatal(err)
	}
	if d := q.Definition(); d.KeyConcurrency != 4 || d.MaxKeyBacklog != 500 {
		t.Fatalf("looked up %+v", d)
	}
	b, err := config.Export(ctx, a)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), "key_concurrency: 4") || !strings.Contains(string(b), "max_key_backlog: 500") {
		t.Fatalf("export:\n%s", b)
	}
	if p := plan(t, a, parse(t, string(b))); !p.Empty() {
		t.Fatalf("the export's plan:\n%s", p)
	}
	changed := plan(t, a, parse(t, "app: shop\nqueues:\n  jobs:\n    keyed: true\n    key_concurrency: 2\n"))
	out := changed.String()
	if !strings.Contains(out, "key_concurrency: 4 -> 2") || !strings.Contains(out, "max_key_backlog: 500 -> none") {
		t.Fatalf("plan:\n%s", out)
	}
}
