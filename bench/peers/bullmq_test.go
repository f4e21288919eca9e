package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"math"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"
)

func TestParseNodeResult(t *testing.T) {
	out := []byte("(node:1) a warning\n{\"mode\":\"work\",\"n\":2000,\"ms\":400.5,\"cpuUs\":120000}\n\n")
	r, err := parseNodeResult(out, nodeWork, 2000)
	if err != nil {
		t.Fatal(err)
	}
	if r != (nodeResult{Mode: "work", N: 2000, MS: 400.5, CPUUs: 120000}) {
		t.Errorf("parsed %+v", r)
	}
	got := taskFigures(r.N, r.MS, 30*time.Millisecond, r.CPUUs)
	if want := []float64{2000 / 0.4005, 15, 60}; len(got) != 3 || math.Abs(got[0]-want[0]) > 1e-6 || got[1] != want[1] || got[2] != want[2] {
		t.Errorf("taskFigures = %v, want %v", got, want)
	}
	for _, tc := range []struct{ out, want string }{
		{`{"mode":"fill","n":2000,"ms":1,"cpuUs":1}`, "result of fill for 2000 jobs, want work for 2000"},
		{`{"mode":"work","n":20,"ms":1,"cpuUs":1}`, "result of work for 20 jobs, want work for 2000"},
		{`{"mode":"work","n":2000,"ms":0,"cpuUs":1}`, "want a positive time"},
		{`{"mode":"work","n":2000,"ms":5,"cpuUs":-1}`, "want a positive time"},
		{"bullmq: boom", `result "bullmq: boom"`},
		{"", `result ""`},
	} {
		if _, err := parseNodeResult([]byte(tc.out), nodeWork, 2000); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: error %v, want %q", tc.out, err, tc.want)
		}
	}
}

func TestNewBullMQWithoutNode(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	b, err := newBullMQ(context.Background(), bullmqDir, "redis://127.0.0.1:1", io.Discard)
	if b != nil || !errors.Is(err, errNoNode) || !strings.Contains(err.Error(), "node is not in PATH") {
		t.Errorf("newBullMQ without node: %v, %v", b, err)
	}
}

// TestRunBullMQ runs BullMQ beside asynq and leat: it needs node and npm,
// and the npm registry on first use (npm ci), so it runs only when
// LEAT_BENCH_PEERS_NODE=1.
func TestRunBullMQ(t *testing.T) {
	if os.Getenv("LEAT_BENCH_PEERS_NODE") != "1" {
		t.Skip("LEAT_BENCH_PEERS_NODE=1 runs BullMQ (node, npm)")
	}
	for _, tool := range []string{"redis-server", "node", "npm"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s is not in PATH", tool)
		}
	}
	for _, tc := range []struct {
		only string
		want []string
	}{
		{"enqueue", []string{`(?m)^enqueue +bullmq +tasks/s +[0-9,.]+$`, `(?m)^enqueue +bullmq +client CPU µs/task +[0-9,.]+$`,
			`(?m)^enqueue +leat/bullmq +Redis CPU µs/task +[0-9.]+$`}},
		{"tasks", []string{`(?m)^tasks +bullmq c10 +tasks/s +[0-9,.]+$`, `(?m)^tasks +bullmq c50 +Redis CPU µs/task +[0-9,.]+$`,
			`(?m)^tasks +leat c10/bullmq c10 +tasks/s +[0-9.]+$`, `(?m)^tasks +leat c50/bullmq c50 +client CPU µs/task +[0-9.]+$`}},
		{"memory", []string{`(?m)^5000 +bullmq +[0-9,]+ +[0-9,]+$`, `(?m)^50 +leat/better peer +[0-9.]+ \((asynq|bullmq)\) +[0-9.]+ \((asynq|bullmq)\)$`}},
	} {
		var out, errs bytes.Buffer
		if err := run(context.Background(), []string{"--events", "200", "--rounds", "1", "--only", tc.only}, &out, &errs); err != nil {
			t.Fatalf("--only %s: %v\n%s", tc.only, err, errs.String())
		}
		if strings.Contains(out.String(), "BullMQ skipped") {
			t.Fatalf("--only %s skipped BullMQ:\n%s", tc.only, out.String())
		}
		for _, re := range tc.want {
			if !regexp.MustCompile(re).MatchString(out.String()) {
				t.Errorf("--only %s: output lacks %s:\n%s", tc.only, re, out.String())
			}
		}
	}
}
