package taskspython

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/leatdev/leat/internal/tools/redistest"
)

// TestWalkThrough runs the README's walk-through with the leat binary and
// python3 alone: leat apply -f leat.yaml, leat worker --config leat.yaml,
// leat enqueue words JSON, leat tasks wait ID printing the word counts;
// and an enqueue to the queue's premium level as words.premium. Nothing
// but the binary's flags says where Redis is; the app comes from the file.
func TestWalkThrough(t *testing.T) {
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("python3 is not installed (scripts/test installs it)")
	}
	bin := filepath.Join(t.TempDir(), "leat")
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/leatdev/leat/cmd/leat").CombinedOutput(); err != nil {
		t.Fatalf("build leat: %v\n%s", err, out)
	}
	_, prefix := redistest.Client(t)
	global := []string{"--redis", redistest.URL(t), "--prefix", prefix}
	// The user's shell: no LEAT_ variable, no PYTHONPATH (handler.py finds
	// the SDK of this repository).
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME")}
	leat := func(args ...string) string {
		t.Helper()
		cmd := exec.Command(bin, append(append([]string{}, global...), args...)...)
		cmd.Env = env
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("leat %s: %v\n%s%s", strings.Join(args, " "), err, out, stderr.String())
		}
		return string(out)
	}

	if out := leat("apply", "-f", "leat.yaml", "--dry-run"); !strings.Contains(out, "queue words: added\n") || !strings.Contains(out, "dry run: nothing was written") {
		t.Fatalf("apply --dry-run:\n%s", out)
	}
	if out := leat("apply", "-f", "leat.yaml"); !strings.Contains(out, "queue words: added\n  concurrency: 4\n") || !strings.Contains(out, "applied to app words") {
		t.Fatalf("apply:\n%s", out)
	}
	if out := leat("apply", "-f", "leat.yaml"); !strings.Contains(out, "queue words: unchanged\n") || !strings.Contains(out, "no changes") {
		t.Fatalf("apply again:\n%s", out)
	}

	worker := exec.Command(bin, append(append([]string{}, global...), "worker", "--config", "leat.yaml")...)
	worker.Env = env
	var wout bytes.Buffer
	worker.Stdout, worker.Stderr = &wout, &wout
	if err := worker.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = worker.Process.Kill() })

	id := strings.TrimSpace(leat("enqueue", "words", `{"text":"a b a"}`))
	var got struct {
		Words  int            `json:"words"`
		Counts map[string]int `json:"counts"`
	}
	out := leat("tasks", "wait", "--timeout", "2m", id)
	if err := json.Unmarshal([]byte(out), &got); err != nil || got.Words != 3 || got.Counts["a"] != 2 || got.Counts["b"] != 1 {
		t.Fatalf("tasks wait printed %q (%v); worker:\n%s", out, err, wout.String())
	}

	id = strings.TrimSpace(leat("enqueue", "words.premium", `{"text":"to be or not to be"}`))
	var info struct {
		State    string `json:"state"`
		Priority string `json:"priority"`
	}
	out = leat("tasks", "wait", "--json", "--timeout", "2m", id)
	if err := json.Unmarshal([]byte(out), &info); err != nil || info.State != "succeeded" || info.Priority != "premium" {
		t.Fatalf("words.premium: %q (%v)", out, err)
	}

	_ = worker.Process.Signal(syscall.SIGINT)
	done := make(chan error, 1)
	go func() { done <- worker.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("worker: %v\n%s", err, wout.String())
		}
	case <-time.After(time.Minute):
		t.Fatalf("the worker did not stop on SIGINT:\n%s", wout.String())
	}
	if !strings.Contains(wout.String(), "running task queue words with: python3 handler.py") {
		t.Fatalf("worker output:\n%s", wout.String())
	}
}
