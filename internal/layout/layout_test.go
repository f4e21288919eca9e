package layout

import (
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"go.uber.org/goleak"
)

const module = "github.com/leatdev/leat"

// deps returns the packages of this module (and the CLI library) that pkg
// depends on, directly or not.
func deps(t *testing.T, pkg string) []string {
	t.Helper()
	out, err := exec.Command("go", "list", "-deps", "-f", "{{.ImportPath}}", module+"/"+pkg).Output()
	if err != nil {
		t.Fatalf("go list %s: %v", pkg, err)
	}
	var ds []string
	for _, d := range strings.Fields(string(out)) {
		if d != module+"/"+pkg && (strings.HasPrefix(d, module+"/") || strings.HasPrefix(d, "github.com/urfave/cli")) {
			ds = append(ds, strings.TrimPrefix(d, module+"/"))
		}
	}
	return ds
}

func TestImportsFlowOneWay(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("the go command is not on PATH")
	}
	// Each package may depend on the ones before it in this order (and on
	// internal packages), never on the ones after it.
	order := []string{"stream", "middleware", "rebalance", "executor", "app", "task", "api", "cmd"}
	for i, pkg := range order {
		ds := deps(t, pkg)
		for _, later := range order[i+1:] {
			if slices.Contains(ds, later) {
				t.Errorf("%s depends on %s", pkg, later)
			}
		}
		if pkg != "cmd" && slices.ContainsFunc(ds, func(d string) bool { return strings.HasPrefix(d, "github.com/urfave/cli") }) {
			t.Errorf("library package %s depends on the CLI library", pkg)
		}
	}
	// inspect reads Redis below the runtime; metrics sits at the edge,
	// beside app: neither depends on app, cmd or the CLI library.
	for _, pkg := range []string{"inspect", "metrics"} {
		for _, d := range deps(t, pkg) {
			if d == "app" || d == "cmd" || strings.HasPrefix(d, "github.com/urfave/cli") || (pkg == "inspect" && d == "executor") {
				t.Errorf("%s depends on %s", pkg, d)
			}
		}
	}
	for _, pkg := range []string{"internal/keys", "internal/scripts", "internal/lease", "internal/rdb", "internal/core", "internal/redistest"} {
		for _, d := range deps(t, pkg) {
			if !strings.HasPrefix(d, "internal/") {
				t.Errorf("%s depends on %s", pkg, d)
			}
		}
	}
}

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// The library's module graph, which its users inherit, has no in-memory
// Redis server and no browser driver: the examples that embed the one, and
// the end-to-end tests that drive Chromium, are modules of their own.
func TestLibraryModuleGraph(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("the go command is not on PATH")
	}
	cmd := exec.Command("go", "list", "-m", "all")
	cmd.Env = append(cmd.Environ(), "GOWORK=off", "GOFLAGS=-mod=mod")
	cmd.Dir = "../.."
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list -m all: %v", err)
	}
	// Nor the peers that bench/peers (a module outside the workspace)
	// measures leat against.
	for _, m := range []string{"github.com/alicebob/miniredis", "github.com/yuin/gopher-lua", "github.com/chromedp/", "github.com/hibiken/asynq", "github.com/ThreeDotsLabs/watermill"} {
		if strings.Contains(string(out), m) {
			t.Errorf("the library's module graph includes %s", m)
		}
	}
}

// Users need Go 1.25 or newer, not more: a dependency upgrade that raises
// a module's go directive is caught here. bench/peers is not in the
// workspace (its peers must stay out of the library's graph) but is held
// to the same version, so that the benchmark runs wherever leat builds.
func TestGoVersion(t *testing.T) {
	for _, mod := range []string{"../../go.mod", "../../leattest/go.mod", "../../examples/go.mod", "../../e2e/go.mod", "../../go.work", "../../bench/peers/go.mod"} {
		b, err := os.ReadFile(mod)
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(line, "go "); ok && v != "1.25.0" {
				t.Errorf("%s: go %s, want 1.25.0", mod, v)
			}
		}
	}
}
