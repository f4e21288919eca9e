package cmd

import (
	"context"
	"encoding/json"
	"fmt"
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
		if r.status != 0 || len(lines) != 12 || !strings.Contains(lines[0], "succeeded, 4 nodes") || lines[1] != "nodes: 4 succeeded" ||
			lines[10] != "depth 2: 1 node" || !strings.HasPrefix(lines[11], "  d  fa  succeeded") || !strings.HasSuffix(lines[11], "<- b, c") {
			t.Fatalf("show: %+v", r)
		}
		if r := run(t, nil, "", s.args("flows", "cancel", id)...); r.status != 2 {
			t.Fatalf("cancel an ended flow: %+v", r)
		}
	}
	// submit --wait prints the ID, then what "flows wait" prints; with
	// --json, the flow.
	r := run(t, nil, "", s.args("flows", "submit", write("waited.yaml", diamondYAML), "--wait", "--timeout", "30s")...)
	out := strings.SplitN(r.stdout, "\n", 2)
	var d struct{ B, C map[string]json.RawMessage }
	if r.status != 0 || len(out) != 2 || out[0] == "" || json.Unmarshal([]byte(out[1]), &d) != nil || string(d.C["self"]) != `"C"` {
		t.Fatalf("submit --wait: %+v", r)
	}
	r = run(t, nil, "", s.args("flows", "submit", "--json", "--wait", write("waited.json", js))...)
	var fl task.FlowInfo
	if r.status != 0 || json.Unmarshal([]byte(r.stdout), &fl) != nil || fl.State != task.FlowSucceeded || len(fl.Nodes) != 4 || fl.Results["d"] == nil {
		t.Fatalf("submit --json --wait: %+v", r)
	}
	r = run(t, nil, "", s.args("flows", "submit", "--json", write("again.json", js))...)
	var idOnly map[string]string
	if r.status != 0 || json.Unmarshal([]byte(r.stdout), &idOnly) != nil || idOnly["id"] == "" {
		t.Fatalf("submit --json: %+v", r)
	}
	if r := run(t, nil, "", s.args("flows", "wait", idOnly["id"])...); r.status != 0 {
		t.Fatalf("wait: %+v", r)
	}
	if r := run(t, nil, "", s.args("flows", "submit", "--wait", "--timeout", "0s", write("zero.json", js))...); r.status != 2 {
		t.Fatalf("submit --timeout 0s: %+v", r)
	}
	r = run(t, nil, "", s.args("flows", "list", "--state", "succeeded")...)
	if r.status != 0 || len(strings.Split(strings.TrimSpace(r.stdout), "\n")) != 6 {
		t.Fatalf("list: %+v", r)
	}
	if r := run(t, nil, "", s.args("flows", "show", "nope")...); r.status != 2 {
		t.Fatalf("show unknown: %+v", r)
	}
}

// "flows show" draws a flow in layers: a block per depth, each node with
// its queue, state and parents (a node added at run time, its adder); a
// layer of more than 20 nodes shows those not succeeded first and counts
// the others, unless --all; what Redis holds is quoted.
func TestDrawFlow(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 11, 29, 4, 0, 0, 0, time.UTC)
	in := &task.FlowInfo{ID: "f1", State: task.FlowRunning, CreatedAt: at, Nodes: []task.FlowNodeInfo{
		{Name: "a", Queue: "fetch", State: task.Succeeded, OnFailure: task.FailFlow},
		{Name: "b", Queue: "parse", State: task.Active, Parents: []string{"a"}, OnFailure: task.FailFlow},
		{Name: "c", Queue: "parse\x1b[31m", State: task.Failed, Parents: []string{"a"}, OnFailure: task.ContinueOnFailure},
		{Name: "c-1", Queue: "parse", State: task.Pending, SpawnedBy: "c", OnFailure: task.FailFlow},
		{Name: "d", Queue: "mail", State: task.Waiting, Parents: []string{"b", "c"}, OnFailure: task.FailFlow},
	}}
	var b strings.Builder
	drawFlow(&b, in, false)
	want := `flow f1 running, 5 nodes, created 2026-11-29T04:00:00Z
nodes: 1 active, 1 failed, 1 pending, 1 succeeded, 1 waiting

depth 0: 1 node
  a    fetch          succeeded

depth 1: 2 nodes
  b    parse          active                         <- a
  c    parse\x1b[31m  failed (on failure: continue)  <- a

depth 2: 2 nodes
  c-1  parse          pending                        <- c (added at run time)
  d    mail           waiting                        <- b, c
`
	if got := b.String(); got != want {
		t.Fatalf("got\n%s\nwant\n%s", got, want)
	}

	wide := &task.FlowInfo{ID: "wide", State: task.FlowRunning, CreatedAt: at,
		Nodes: []task.FlowNodeInfo{{Name: "split", Queue: "q", State: task.Succeeded}}}
	for i := range 30 {
		st := task.Succeeded
		if i%10 == 7 {
			st = task.Active
		}
		wide.Nodes = append(wide.Nodes, task.FlowNodeInfo{Name: fmt.Sprintf("part-%02d", i), Queue: "q", State: st, Parents: []string{"split"}})
	}
	b.Reset()
	drawFlow(&b, wide, false)
	got := b.String()
	if !strings.Contains(got, "depth 1: 30 nodes\n") || strings.Count(got, "<- split") != 20 ||
		!strings.Contains(got, "  ... and 10 more: 10 succeeded (--all prints them)\n") {
		t.Fatalf("a wide layer cut:\n%s", got)
	}
	for _, n := range []string{"part-07", "part-17", "part-27"} {
		if !strings.Contains(got, "  "+n+"  q  active") {
			t.Errorf("active node %s not among those printed:\n%s", n, got)
		}
	}
	b.Reset()
	drawFlow(&b, wide, true)
	if got := b.String(); strings.Count(got, "<- split") != 30 || strings.Contains(got, "more:") {
		t.Fatalf("--all:\n%s", got)
	}
}
