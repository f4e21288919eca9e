package cmd

import (
	"context"
	"encoding/json"
	"net"
	"regexp"
	"strings"
	"testing"

	"github.com/leatdev/leat/internal/bench"
	"github.com/leatdev/leat/internal/redistest"
)

// benchLine is one line of the bench table: benchmark, variant, events/s and
// a ratio on the lines of leat and raw+decode.
var benchLine = regexp.MustCompile(`^(send|process|tasks) +(leat|raw|raw\+decode) +[0-9][0-9,]*(?: +([0-9]+\.[0-9]{2}))?$`)

func TestBench(t *testing.T) {
	t.Parallel()
	c, _ := redistest.Client(t)
	global := []string{"--redis", redistest.URL(t)} // no --app: bench needs none

	r := run(t, nil, "", append(global, "bench", "--events", "2000", "--rounds", "1")...)
	if r.status != 0 || r.stderr != "" {
		t.Fatalf("status %d, stderr %q", r.status, r.stderr)
	}
	lines := strings.Split(strings.TrimSuffix(r.stdout, "\n"), "\n")
	want := []string{"send leat", "send raw", "process leat", "process raw", "process raw+decode", "tasks leat", "tasks raw"}
	if len(lines) != 1+len(want) || !strings.HasPrefix(lines[0], "benchmark") || !strings.Contains(lines[0], "events/s (median of 1)") {
		t.Fatalf("stdout:\n%s\nwant a header and %d lines", r.stdout, len(want))
	}
	for i, line := range lines[1:] {
		m := benchLine.FindStringSubmatch(line)
		if m == nil || m[1]+" "+m[2] != want[i] {
			t.Errorf("line %q, want %s and its figures", line, want[i])
			continue
		}
		if hasRatio := m[2] != "raw"; hasRatio != (m[3] != "") {
			t.Errorf("line %q: a ratio belongs on the leat and raw+decode lines only", line)
		}
	}

	r = run(t, nil, "", append(global, "bench", "--events", "500", "--rounds", "2", "--partitions", "4", "--payload", "8", "--only", "send", "--json")...)
	if r.status != 0 || r.stderr != "" {
		t.Fatalf("--json: status %d, stderr %q", r.status, r.stderr)
	}
	var doc benchReport
	if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil {
		t.Fatalf("--json output does not parse: %v\n%s", err, r.stdout)
	}
	if len(doc.Benchmarks) != 1 {
		t.Fatalf("--only send: %d benchmarks, want 1", len(doc.Benchmarks))
	}
	res := doc.Benchmarks[0]
	wantCfg := bench.Config{Events: 500, Rounds: 2, Partitions: 4, PayloadBytes: 8}
	if res.Benchmark != bench.BenchmarkSend || res.Config != wantCfg || len(res.Variants) != 2 ||
		len(res.Variants[0].Rates) != 2 || res.Ratio <= 0 {
		t.Errorf("--json result %+v, want send with %+v, 2 variants, 2 rates each and a ratio", res, wantCfg)
	}

	ctx := context.Background()
	it := c.Scan(ctx, 0, bench.PrefixRoot+"*", 1000).Iterator()
	for it.Next(ctx) {
		t.Errorf("benchmark key %q left", it.Val())
	}
	if err := it.Err(); err != nil {
		t.Fatal(err)
	}
}

func TestBenchErrors(t *testing.T) {
	t.Parallel()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	r := run(t, nil, "", "--redis", "redis://user:hunter2@"+addr, "bench")
	wantFailure(t, r, exitFailure, "cannot reach Redis at redis://"+addr, "connection refused")
	if strings.Contains(r.stderr, "hunter2") {
		t.Errorf("stderr %q shows the password", r.stderr)
	}

	url := redistest.URL(t)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"bench", "--only", "receive"}, `--only "receive": want send, process or tasks`},
		{[]string{"bench", "--events", "0"}, "--events 0 out of range 1..2147483647"},
		{[]string{"bench", "--rounds", "-1"}, "--rounds -1 out of range"},
		{[]string{"bench", "--partitions", "70000"}, "--partitions 70000 out of range 1..65536"},
		{[]string{"bench", "--payload", "0"}, "--payload 0 out of range"},
		{[]string{"bench", "extra"}, "bench: want no arguments, got 1"},
		{[]string{"bench", "--nope"}, "bench: flag provided but not defined: -nope"},
	} {
		r := run(t, nil, "", append([]string{"--redis", url}, tc.args...)...)
		wantFailure(t, r, exitUsage, tc.want)
	}
}
