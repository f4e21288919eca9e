package e2e

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/leatdev/leat/internal/tools/redistest"
)

// TestReadmeWalkThrough runs what README.md tells a new user to run, as
// written, in one shell: the quickstart, leat inspect, the task queue with
// leat serve and curl, the dashboard, and the Python handler with
// pip install and the standalone binary. The shell differs from a user's in
// what a script needs and a person does not: the leat binary built from
// this tree stands for "go run ./cmd/leat" and "leat" alike, Redis is a
// server of the test's (LEAT_REDIS_URL), leat serve listens on a free port,
// the script waits for it to answer before the first curl, and pip runs in
// a fresh virtual environment.
func TestReadmeWalkThrough(t *testing.T) {
	for _, bin := range []string{"python3", "curl", "bash"} {
		if _, err := exec.LookPath(bin); err != nil {
			t.Skipf("%s is not installed (scripts/test installs what the suite needs)", bin)
		}
	}
	if err := exec.Command("python3", "-c", "import ensurepip, venv").Run(); err != nil {
		t.Skip("python3's venv is not installed (scripts/test installs it)")
	}
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	blocks := readmeShellBlocks(t, filepath.Join(root, "README.md"))
	port := freePort(t)
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	var script strings.Builder
	script.WriteString("set -euo pipefail\n")
	for _, section := range []string{"Set up", "Quickstart", "A task queue", "Handlers in Python"} {
		lines, ok := blocks[section]
		if !ok {
			t.Fatalf("README.md has no sh block under %q", section)
		}
		script.WriteString("cd " + root + "\n")
		for _, line := range lines {
			switch {
			case strings.HasPrefix(line, "./scripts/test"):
				continue // the suite runs this test
			case strings.Contains(line, " serve &"):
				line = strings.Replace(line, " serve &", " serve --addr "+addr+" &", 1)
				line += "\nfor i in $(seq 600); do curl -sf http://" + addr + "/v1/info >/dev/null 2>&1 && break; sleep 0.1; done"
			}
			line = strings.ReplaceAll(line, "go run ./cmd/leat", "leat")
			line = strings.ReplaceAll(line, "localhost:8080", addr)
			script.WriteString(line + "\n")
		}
	}
	// The dashboard the README says to open.
	script.WriteString("curl -sf http://" + addr + "/ | grep -q '<title>'\necho dashboard served\n")

	dir := t.TempDir()
	bindir := filepath.Join(dir, "bin")
	build := exec.Command("go", "build", "-o", filepath.Join(bindir, "leat"), "./cmd/leat")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build leat: %v\n%s", err, out)
	}
	venv := filepath.Join(dir, "venv")
	if out, err := exec.Command("python3", "-m", "venv", venv).CombinedOutput(); err != nil {
		t.Fatalf("venv: %v\n%s", err, out)
	}
	srv := redistest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-c", script.String()+"kill $(jobs -p) 2>/dev/null || true\nwait\n")
	cmd.Dir = root
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "LEAT_") && !strings.HasPrefix(kv, "PATH=") && !strings.HasPrefix(kv, "VIRTUAL_ENV=") {
			env = append(env, kv)
		}
	}
	cmd.Env = append(env, "LEAT_REDIS_URL="+srv.URL, "PATH="+bindir+":"+filepath.Join(venv, "bin")+":"+os.Getenv("PATH"),
		"VIRTUAL_ENV="+venv, "PIP_NO_INDEX=1", "PIP_DISABLE_PIP_VERSION_CHECK=1")
	cmd.WaitDelay = 10 * time.Second
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the README's commands failed: %v\nscript:\n%s\noutput:\n%s", err, script.String(), out)
	}
	for _, want := range []string{
		"processed 10 orders", // the quickstart
		"printer",             // leat inspect orders: the processor
		"thumbnails",          // the task queue's counts
		`"state":"succeeded"`, // the task enqueued with curl, run by the example's worker
		"dashboard served",    // the dashboard
	} {
		if !strings.Contains(string(out), want) {
			t.Errorf("the README's commands printed no %q:\n%s", want, out)
		}
	}
	if !regexp.MustCompile(`"words": ?3\b`).Match(out) { // the Python handler's result
		t.Errorf("the README's commands printed no word count of 3:\n%s", out)
	}
}

// readmeShellBlocks returns the lines of the first sh block under each
// "## " heading of the README at path.
func readmeShellBlocks(t *testing.T, path string) map[string][]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	blocks := map[string][]string{}
	heading, in := "", false
	var lines []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case in && line == "```":
			if _, seen := blocks[heading]; !seen {
				blocks[heading] = lines
			}
			in, lines = false, nil
		case in:
			lines = append(lines, line)
		case line == "```sh":
			in = true
		case strings.HasPrefix(line, "## "):
			heading = strings.TrimPrefix(line, "## ")
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return blocks
}

// freePort returns a TCP port free on the loopback interface now.
func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}
