package cmd

import (
	"context"
	"encoding/json"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/leatdev/leat/internal/tools/bench"
	"github.com/leatdev/leat/internal/tools/redistest"
)

// benchLine is one line of the bench table: benchmark, variant (or ratio),
// figure and median.
var benchLine = regexp.MustCompile(`^([a-z+]+) {2,}(\S+(?: \S+)*) {2,}(\S+(?: \S+)*) {2,}(-?[0-9][0-9,]*(?:\.[0-9]{2})?)$`)

func TestBench(t *testing.T) {
	t.Parallel()
	c, _ := redistest.Client(t)
	global := []string{"--redis", redistest.URL(t)} // no --app: bench needs none

	r := run(t, nil, "", append(global, "bench", "--events", "2000", "--rounds", "1", "--partitions", "4",
		"--rate", "500", "--latency", "200ms", "--idle", "100ms", "--wide", "8")...)
	if r.status != 0 || r.stderr != "" {
		t.Fatalf("status %d, stderr %q", r.status, r.stderr)
	}
	lines := strings.Split(strings.TrimSuffix(r.stdout, "\n"), "\n")
	if !strings.HasPrefix(lines[0], "benchmark") || !strings.Contains(lines[0], "median of 1") {
		t.Fatalf("header %q", lines[0])
	}
	seen := map[string]bool{}
	for _, line := range lines[1:] {
		m := benchLine.FindStringSubmatch(line)
		if m == nil {
			t.Errorf("line %q does not read as benchmark, variant, figure, median", line)
			continue
		}
		seen[m[1]+" "+m[2]+" "+m[3]] = true
	}
	for _, want := range []string{
		"send leat/raw events/s", "process leat/raw+decode events/s", "produce+consume leat/raw events/s",
		"latency leat p99.9 ms", "latency leat/raw p99 ms", "tasks leat c10/raw tasks/s", "tasks leat c50/raw tasks/s",
		"rebalance join moved: max gap ms", "rebalance graceful stop unmoved: max gap ms",
		"memory leat worker RSS idle MiB", "memory leat/raw Redis bytes/entry", "idle leat connections",
	} {
		if !seen[want] {
			t.Errorf("no line %q in\n%s", want, r.stdout)
		}
	}

	profile := filepath.Join(t.TempDir(), "cpu.pprof")
	r = run(t, nil, "", append(global, "bench", "--events", "500", "--rounds", "2", "--partitions", "4", "--payload", "8", "--only", "send,process", "--json",
		"--cpuprofile", profile)...)
	if r.status != 0 || r.stderr != "" {
		t.Fatalf("--json: status %d, stderr %q", r.status, r.stderr)
	}
	// A profile is gzipped protocol buffers.
	if b, err := os.ReadFile(profile); err != nil || len(b) < 100 || b[0] != 0x1f || b[1] != 0x8b {
		t.Errorf("--cpuprofile wrote %d bytes (error %v), want a gzipped profile", len(b), err)
	}
	var doc benchReport
	if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil {
		t.Fatalf("--json output does not parse: %v\n%s", err, r.stdout)
	}
	if len(doc.Benchmarks) != 2 {
		t.Fatalf("--only send,process: %d benchmarks, want 2", len(doc.Benchmarks))
	}
	res := doc.Benchmarks[0]
	wantCfg := bench.Config{Events: 500, Rounds: 2, Partitions: 4, PayloadBytes: 8, Rate: bench.DefaultRate,
		Latency: bench.DefaultLatency, Idle: bench.DefaultIdle, Wide: bench.DefaultWide}
	ratio, ok := res.Ratio(bench.VariantLeat, bench.VariantRaw, bench.FigureRate)
	if res.Benchmark != bench.BenchmarkSend || res.Config != wantCfg || len(res.Variants) != 2 ||
		len(res.Variants[0].Figures[0].Values) != 2 || !ok || ratio <= 0 {
		t.Errorf("--json result %+v, want send with %+v, 2 variants, 2 values each and a ratio", res, wantCfg)
	}
	if doc.Benchmarks[1].Benchmark != bench.BenchmarkProcess {
		t.Errorf("second benchmark %q, want process", doc.Benchmarks[1].Benchmark)
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
		{[]string{"bench", "--only", "send,receive"}, `--only "receive": want a comma-separated list of send,process,produce+consume,latency,tasks,rebalance,memory,idle`},
		{[]string{"bench", "--rate", "0"}, "--rate 0 out of range 1..1000000"},
		{[]string{"bench", "--latency", "0s"}, "--latency 0s out of range 1ms..1h"},
		{[]string{"bench", "--wide", "0"}, "--wide 0 out of range"},
		{[]string{"bench", "--aof"}, "--aof starts a redis-server of its own: drop --redis"},
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

// TestBenchAOF runs a benchmark against the persisted server --aof starts.
func TestBenchAOF(t *testing.T) {
	if _, err := exec.LookPath("redis-server"); err != nil {
		t.Skip("redis-server is not in PATH")
	}
	r := run(t, nil, "", "bench", "--aof", "--only", "send", "--events", "300", "--rounds", "1", "--partitions", "2")
	if r.status != 0 || r.stderr != "" {
		t.Fatalf("status %d, stderr %q", r.status, r.stderr)
	}
	if !strings.Contains(r.stdout, "send        leat/raw   events/s") {
		t.Errorf("stdout:\n%s\nwant the send ratio", r.stdout)
	}
}

func TestBenchAOFMissing(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	r := run(t, nil, "", "bench", "--aof", "--only", "send")
	wantFailure(t, r, exitFailure, "redis-server is not in PATH")
}
