package layout

import (
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"go.uber.org/goleak"
)

const (
	module = "github.com/leatdev/leat"
	cli    = "github.com/urfave/cli/v2"
)

// What a package is, for the rules beyond the direction of its arrows.
type kind int

const (
	library kind = iota // the public packages, the internal ones below them, leattest
	tool                // test harness, benchmark, fault injection
	edge                // the command and its main
	top                 // examples, end-to-end tests, the Python SDK's tests
)

// layers are the packages of the workspace, low to high, each with the
// packages (of this module, and the CLI library) it imports from its
// non-test files. A row may name only rows above it.
var layers = []struct {
	pkg     string
	kind    kind
	imports []string
}{
	// Leaves: the RESP codec, pure logic.
	{"internal/resp", library, nil},
	{"internal/topology", library, nil},
	{"internal/rounds", library, nil},
	{"internal/clock", library, nil},
	{"internal/netguard", library, nil},
	{"internal/schedule", library, nil},
	{"internal/declared", library, nil},
	{"internal/schema", library, nil},
	{"internal/layout", library, nil},
	{"internal/tools/docscheck", tool, nil},
	{"internal/tools/redistest", tool, nil},
	// The Redis protocol: commands, Lua scripts and their wrappers; leases.
	{"internal/rdb", library, []string{"internal/resp", "internal/topology"}},
	{"internal/lease", library, []string{"internal/rdb", "internal/topology"}},
	{"internal/core", library, []string{"internal/rdb", "internal/rounds", "internal/schema", "internal/topology"}},
	// The runtime.
	{"stream", library, []string{"internal/core", "internal/rdb", "internal/topology"}},
	{"rebalance", library, nil},
	{"executor", library, []string{"internal/core"}},
	{"internal/runner", library, []string{"executor", "internal/core", "internal/lease", "internal/rdb", "internal/topology", "rebalance"}},
	{"middleware", library, []string{"executor", "internal/core", "internal/rdb", "stream"}},
	{"inspect", library, []string{"internal/core", "internal/lease", "internal/rdb"}},
	{"app", library, []string{"executor", "internal/clock", "internal/core", "internal/declared", "internal/lease", "internal/netguard", "internal/rdb", "internal/runner", "internal/schedule", "internal/topology", "middleware", "stream"}},
	{"task", library, []string{"app", "executor", "internal/clock", "internal/core", "internal/declared", "internal/lease", "internal/netguard", "internal/rdb", "internal/rounds", "internal/schedule", "internal/schema", "internal/topology", "middleware"}},
	// Subprocess handlers of task queues.
	{"task/subprocess", library, []string{"task"}},
	// The configuration file, read by the command and by programs.
	{"config", library, []string{"app", "internal/rdb", "internal/schedule", "stream", "task", "task/subprocess"}},
	// The control plane: deployments on a worker's disk, pools and workers.
	{"internal/deploy", library, nil},
	{"controlplane", library, []string{"internal/deploy", "internal/rdb"}},
	// WebAssembly handlers of task queues, and the tool that builds the
	// test handlers.
	{"task/wasm", library, []string{"app", "internal/rdb", "task"}},
	{"internal/tools/wasmtest", tool, []string{"internal/tools/redistest", "task/wasm"}},
	// The edge: metrics and the HTTP API beside the runtime.
	{"metrics", library, []string{"executor", "inspect"}},
	{"api", library, []string{"app", "controlplane", "inspect", "internal/core", "internal/rdb", "internal/schema", "task"}},
	// Tools that drive a whole app sit above the runtime they drive.
	{"internal/tools/bench", tool, []string{"app", "executor", "internal/core", "internal/rdb", "stream", "task"}},
	{"internal/tools/chaos", tool, []string{"app", "executor", "stream", "task"}},
	{"internal/tools/chaos/chaosworker", tool, []string{"app", "internal/tools/chaos", "stream", "task"}},
	// The public tester package, a module of its own.
	{"leattest", library, []string{"app", "executor", "internal/clock", "internal/core", "internal/rdb", "stream", "task"}},
	// The command.
	{"cmd", edge, []string{cli, "api", "app", "config", "controlplane", "executor", "inspect", "internal/tools/bench", "internal/core", "internal/declared", "internal/deploy", "internal/netguard", "internal/rdb", "metrics", "stream", "task", "task/subprocess", "task/wasm"}},
	{"cmd/leat", edge, []string{"cmd"}},
	// The other modules of the workspace.
	{"examples/quickstart", top, []string{"app", "leattest", "stream"}},
	{"examples/pageviews", top, []string{"app", "leattest", "stream"}},
	{"examples/tasks", top, []string{"app", "task"}},
	{"examples/wasm", top, nil},
	{"examples/wasm/declare", top, []string{"app", "task"}},
	{"examples/wasm/lines", top, nil},
	{"examples/wasm/reactor", top, nil},
	{"examples/tasks-python", top, nil},
	{"examples/flows", top, nil},
	{"examples/orders", top, []string{"app", "cmd", "stream"}},
	{"examples/rekey", top, []string{"app", "leattest", "stream"}},
	{"examples/enrich", top, []string{"app", "cmd", "executor", "stream"}},
	{"e2e", top, nil},
	{"sdk/python", top, nil},
}

// The patterns that list every package of the workspace, from its root.
var workspace = []string{"./...", "./e2e/...", "./examples/...", "./leattest/...", "./sdk/python/..."}

// imports returns, for every package of the workspace, the packages of this
// module (without its path) and the CLI library its non-test files import.
func imports(t *testing.T) map[string][]string {
	t.Helper()
	args := append([]string{"list", "-f", "{{.ImportPath}} {{join .Imports \" \"}}"}, workspace...)
	cmd := exec.Command("go", args...)
	cmd.Dir = "../.."
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	got := map[string][]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		pkg := strings.TrimPrefix(f[0], module+"/")
		got[pkg] = []string{}
		for _, imp := range f[1:] {
			if imp == cli || strings.HasPrefix(imp, cli+"/") {
				got[pkg] = append(got[pkg], cli)
			} else if p, ok := strings.CutPrefix(imp, module+"/"); ok {
				got[pkg] = append(got[pkg], p)
			}
		}
	}
	return got
}

// The table itself flows one way: each row names only rows above it, so
// an arrow back up, or a cycle, cannot be written into it.
func TestLayersFlowOneWay(t *testing.T) {
	kinds := map[string]kind{}
	for _, l := range layers {
		if _, dup := kinds[l.pkg]; dup {
			t.Errorf("%s: two rows", l.pkg)
		}
		for _, imp := range l.imports {
			k, above := kinds[imp]
			switch {
			case imp == cli:
				if l.kind == library || l.kind == tool {
					t.Errorf("%s: a library package or tool may not import the CLI library", l.pkg)
				}
			case !above:
				t.Errorf("%s may import %s, which is not in a row above it", l.pkg, imp)
			case k == tool && l.kind == library:
				t.Errorf("library package %s may import tool %s", l.pkg, imp)
			}
		}
		kinds[l.pkg] = l.kind
	}
}

// Every package of the workspace is in the table, and imports only what
// its row allows.
func TestImportsFlowOneWay(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("the go command is not on PATH")
	}
	got := imports(t)
	rows := map[string][]string{}
	for _, l := range layers {
		rows[l.pkg] = l.imports
		if _, ok := got[l.pkg]; !ok {
			t.Errorf("%s: in the table, not in the workspace", l.pkg)
		}
	}
	for pkg, imps := range got {
		allowed, ok := rows[pkg]
		if !ok {
			t.Errorf("%s: a package the table does not place; add its row", pkg)
			continue
		}
		for _, imp := range imps {
			if !slices.Contains(allowed, imp) {
				t.Errorf("%s imports %s, an arrow its row does not allow", pkg, imp)
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
	for _, m := range []string{"github.com/ThreeDotsLabs/watermill", "github.com/alicebob/miniredis", "github.com/chromedp/", "github.com/hibiken/asynq", "github.com/yuin/gopher-lua"} {
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
	for _, mod := range []string{"../../bench/peers/go.mod", "../../e2e/go.mod", "../../examples/go.mod", "../../go.mod", "../../go.work", "../../leattest/go.mod"} {
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
