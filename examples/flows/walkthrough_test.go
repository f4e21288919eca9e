package flows

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/leatdev/leat/internal/tools/redistest"
)

// TestWalkThrough runs the README's walk-through with the leat binary and
// python3 alone: leat apply -f leat.yaml, leat worker --config leat.yaml,
// leat flows submit diamond.yaml, leat flows wait ID printing d's result,
// which holds what b and c returned, and leat flows show ID.
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
	leat("apply", "-f", "leat.yaml")
	worker := exec.Command(bin, append(append([]string{}, global...), "worker", "--config", "leat.yaml")...)
	worker.Env = env
	var wout bytes.Buffer
	worker.Stdout, worker.Stderr = &wout, &wout
	if err := worker.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = worker.Process.Kill(); _ = worker.Wait() })

	id := strings.TrimSpace(leat("flows", "submit", "diamond.yaml"))
	out := leat("flows", "wait", "--timeout", "2m", id)
	var d struct {
		B struct{ Count int }
		C struct{ Longest string }
	}
	if err := json.Unmarshal([]byte(out), &d); err != nil || d.B.Count != 10 || d.C.Longest != "question" {
		t.Fatalf("flows wait printed %q (%v); worker:\n%s", out, err, wout.String())
	}
	show := leat("flows", "show", id)
	if !strings.Contains(show, "succeeded, 4 nodes") || !strings.Contains(show, "longest") {
		t.Fatalf("flows show:\n%s", show)
	}
}
