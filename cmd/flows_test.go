package cmd

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/leatdev/leat/app"
	"github.com/leatdev/leat/internal/tools/redistest"
	"github.com/leatdev/leat/task"
)

const diamondYAML = `# a -> b, c -> d
nodes:
  a: {queue: fa, payload: {n: 1}}
  b: {queue: fb, payload: "B", parents: [a], options: {max_retries: 2, timeout: 10s}}
  c: {queue: fb, payload: "C", parents: [a], on_failure: continue}
  d:
    queue: fa
    payload: "D"
    parents: [b, c]
`

// TestFlowsCLI: a diamond submitted from a YAML file (and the same from
// JSON) runs, "flows wait" prints d's result with what b and c returned,
// "flows show" draws the graph; bad files write nothing.
func TestFlowsCLI(t *testing.T) {
	t.Parallel()
	s := newShop(t)
	a, err := app.New(app.Config{Name: "shop", Client: s.client, KeyPrefix: s.keys.Prefix,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), LeaderLease: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	handler := func(ctx context.Context, tk *task.Task[json.RawMessage]) (map[string]json.RawMessage, error) {
		out := map[string]json.RawMessage{"self": tk.Payload}
		for name, p := range tk.Parents {
			out[name] = p.Result
		}
		return out, nil
	}
	for _, q := range []string{"fa", "fb"} {
		if _, err := task.Handle(a, q, handler); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = a.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	redistest.Eventually(t, 10*time.Second, "the queues registered", func() bool {
		return s.client.HExists(context.Background(), s.keys.TaskQueues(), "fb").Val()
	})
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}

	for name, text := range map[string]string{
		"unknown parent": "nodes:\n  a: {queue: fa, parents: [zz]}\n",
		"unknown queue":  "nodes:\n  a: {queue: nope}\n",
		"cycle":          "nodes:\n  a: {queue: fa, parents: [b]}\n  b: {queue: fa, parents: [a]}\n",
		"unknown field":  "nodes:\n  a: {queue: fa, retries: 3}\n",
		"bad duration":   "nodes:\n  a: {queue: fa, options: {timeout: soon}}\n",
		"bad policy":     "nodes:\n  a: {queue: fa, on_failure: maybe}\n",
		"empty":          "",
		"not yaml":       "nodes: [",
	} {
		r := run(t, nil, "", s.args("flows", "submit", write("bad.yaml", text))...)
		if r.status != 2 || r.stdout != "" {
			t.Errorf("%s: %+v", name, r)
		}
	}
	if r := run(t, nil, "", s.args("flows", "list", "--json")...); r.status != 0 || strings.TrimSpace(r.stdout) != "[]" {
		t.Fatalf("a bad file wrote a flow: %+v", r)
	}

	js := `{"nodes": {"a": {"queue": "fa", "payload": {"n": 1}}, "b": {"queue": "fb", "payload": "B", "parents": ["a"]},
	  "c": {"queue": "fb", "payload": "C", "parents": ["a"]}, "d": {"queue": "fa", "payload": "D", "parents": ["b", "c"]}}}`
	for _, file := range []string{write("diamond.yaml", diamondYAML), write("diamond.json", js)} {
		r := run(t, nil, "", s.args("flows", "submit", file)...)
		if r.status != 0 {
			t.Fatalf("submit %s: %+v", file, r)
		}
		id := strings.TrimSpace(r.stdout)
		r = run(t, nil, "", s.args("flows", "wait", id)...)
		var d struct{ B, C map[string]json.RawMessage }
		if r.status != 0 || json.Unmarshal([]byte(r.stdout), &d) != nil {
			t.Fatalf("wait: %+v", r)
		}
		if string(d.B["self"]) != `"B"` || string(d.C["self"]) != `"C"` || string(d.B["a"]) != `{"self":{"n":1}}` {
			t.Fatalf("d's result: %s", r.stdout)
		}
		r = run(t, nil, "", s.args("flows", "show", id)...)
		lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
		if r.status != 0 || len(lines) != 6 || !strings.Contains(lines[0], "succeeded, 4 nodes") ||
			!strings.HasPrefix(lines[5], "d ") || !strings.Contains(lines[5], "b, c") {
			t.Fatalf("show: %+v", r)
		}
		if r := run(t, nil, "", s.args("flows", "cancel", id)...); r.status != 2 {
			t.Fatalf("cancel an ended flow: %+v", r)
		}
	}
	r := run(t, nil, "", s.args("flows", "list", "--state", "succeeded")...)
	if r.status != 0 || len(strings.Split(strings.TrimSpace(r.stdout), "\n")) != 3 {
		t.Fatalf("list: %+v", r)
	}
	if r := run(t, nil, "", s.args("flows", "show", "nope")...); r.status != 2 {
		t.Fatalf("show unknown: %+v", r)
	}
}
