package leatpython

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/leatdev/leat/app"
	"github.com/leatdev/leat/internal/tools/redistest"
	"github.com/leatdev/leat/stream"
	"github.com/leatdev/leat/task"
)

func TestMain(m *testing.M) { redistest.Main(m) }

// needPython skips a test without python3 (scripts/test installs it) and
// returns its path; LEAT_TEST_PYTHON names another interpreter (python3.9,
// the oldest the package supports, say).
func needPython(t *testing.T) string {
	t.Helper()
	name := "python3"
	if v := os.Getenv("LEAT_TEST_PYTHON"); v != "" {
		name = v
	}
	py, err := exec.LookPath(name)
	if err != nil {
		t.Skipf("%s is not installed (scripts/test installs python3)", name)
	}
	return py
}

var (
	buildOnce sync.Once
	binDir    string
	binErr    error
)

// leatBinary builds the standalone leat binary once for the tests of this
// package.
func leatBinary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		if binDir, binErr = os.MkdirTemp("", "leat-sdk-"); binErr != nil {
			return
		}
		out, err := exec.Command("go", "build", "-o", filepath.Join(binDir, "leat"), "github.com/leatdev/leat/cmd/leat").CombinedOutput()
		if err != nil {
			binErr = fmt.Errorf("build leat: %v\n%s", err, out)
		}
	})
	if binErr != nil {
		t.Fatal(binErr)
	}
	return filepath.Join(binDir, "leat")
}

// proc is a process started by a test, its output kept.
type proc struct {
	cmd *exec.Cmd
	out *redistest.Buffer
}

// start starts a process that is killed when the test ends, unless stop
// stopped it.
func start(t *testing.T, env []string, name string, args ...string) *proc {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Env = append(os.Environ(), env...)
	p := &proc{cmd: cmd, out: &redistest.Buffer{}}
	cmd.Stdout, cmd.Stderr = p.out, p.out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
		if t.Failed() {
			t.Logf("%s:\n%s", strings.Join(cmd.Args, " "), p.out)
		}
	})
	return p
}

// stop interrupts the process and waits for it, reporting a failing exit.
func (p *proc) stop(t *testing.T) {
	t.Helper()
	_ = p.cmd.Process.Signal(syscall.SIGINT)
	done := make(chan error, 1)
	go func() { done <- p.cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("%s: %v\n%s", strings.Join(p.cmd.Args, " "), err, p.out)
		}
	case <-time.After(30 * time.Second):
		_ = p.cmd.Process.Kill()
		<-done
		t.Errorf("%s did not stop within 30s of SIGINT\n%s", strings.Join(p.cmd.Args, " "), p.out)
	}
}

var servingRE = regexp.MustCompile(`serving app "[^"]+" on (http://[0-9.]+:[0-9]+)`)

// waitFor polls cond every 20ms until it returns a non-empty string or
// the deadline passes.
func waitFor(t *testing.T, d time.Duration, what string, cond func() string) string {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		if s := cond(); s != "" {
			return s
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %s", what, d)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

type event struct {
	User string `json:"user"`
	N    int    `json:"n"`
}

// TestPythonSuite installs the package with pip into a fresh virtual
// environment, offline, and runs the unittest suite of sdk/python/tests
// with that environment's python against app "sdk": the queues and the stream test_client.py names, declared here,
// "leat serve" on a free loopback port, and one "leat worker --exec" per
// queue running tests/sdk_handlers.py. It fails when the suite fails, ran
// no test, or skipped one.
func TestPythonSuite(t *testing.T) {
	py := needPython(t)
	bin := leatBinary(t)
	c, prefix := redistest.Client(t)
	url := redistest.URL(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()

	a, err := app.New(app.Config{Name: "sdk", Client: c, KeyPrefix: prefix, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	backoff := task.Backoff(50*time.Millisecond, 200*time.Millisecond)
	queues := []struct {
		name  string
		opts  []task.Option
		first string // a payload whose task records the queue in Redis
	}{
		{"plain", []task.Option{task.Concurrency(4), task.MaxRetries(2), backoff}, `{"op":"echo"}`},
		{"gen", nil, `{"n":0}`},
		{"async", nil, `{"xs":[]}`},
		{"agen", nil, `{"xs":[]}`},
	}
	firsts := map[*task.Queue[json.RawMessage, json.RawMessage]]string{}
	var plain *task.Queue[json.RawMessage, json.RawMessage]
	for _, q := range queues {
		dq, err := task.Declare[json.RawMessage, json.RawMessage](a, q.name, q.opts...)
		if err != nil {
			t.Fatal(err)
		}
		if q.name == "plain" {
			plain = dq
		}
		// The first enqueue records the queue's definition, which the
		// workers and the API read.
		if firsts[dq], err = dq.Enqueue(ctx, json.RawMessage(q.first)); err != nil {
			t.Fatal(err)
		}
	}
	// test_client.py's WatchQueueTest follows the events of "plain".
	if err := plain.SetEvents(ctx, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := stream.Declare[event](a, "events", stream.KeyField("user"), stream.Partitions(4)); err != nil {
		t.Fatal(err)
	}
	if err := a.Register(ctx); err != nil {
		t.Fatal(err)
	}

	here, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	// The package as a user gets it: pip-installed, offline, into a fresh
	// virtual environment whose python runs the handlers and the suite
	// (tests/ on the path for the handlers' module, not src/).
	venv, vpy, _ := installedVenv(t, py, here, t.TempDir())
	py = vpy
	tests := filepath.Join(here, "tests")
	pyEnv := []string{"PYTHONPATH=" + tests, "PYTHONDONTWRITEBYTECODE=1", "PYTHONNOUSERSITE=1"}
	where := exec.Command(py, "-c", "import leat; print(leat.__file__)")
	where.Env = append(os.Environ(), pyEnv...)
	if out, err := where.Output(); err != nil || !strings.HasPrefix(string(out), venv+string(filepath.Separator)) {
		t.Fatalf("leat imported from %q (%v), want the virtual environment %s", out, err, venv)
	}
	global := []string{"--redis", url, "--prefix", prefix, "--app", "sdk"}

	serve := start(t, nil, bin, append(global, "serve", "--addr", "127.0.0.1:0")...)
	api := waitFor(t, 30*time.Second, "leat serve's address", func() string {
		if m := servingRE.FindStringSubmatch(serve.out.String()); m != nil {
			return m[1]
		}
		return ""
	})
	var workers []*proc
	for _, q := range queues {
		args := append(global, "worker", "--queue", q.name, "--exec", py+" -m sdk_handlers "+q.name, "--grace", "1s", "--worker-id", "py-"+q.name)
		workers = append(workers, start(t, pyEnv, bin, args...))
	}
	// Every worker runs its handler: the first tasks succeed.
	for q, id := range firsts {
		in, err := q.Wait(ctx, id)
		if err != nil || in.State != task.Succeeded {
			t.Fatalf("queue %s's first task: %+v, %v", q.Name(), in, err)
		}
	}

	suite := exec.CommandContext(ctx, py, "-m", "unittest", "discover", "-s", tests, "-v")
	suite.Dir = here
	marks := t.TempDir()
	suite.Env = append(os.Environ(), append(pyEnv, "LEAT_API_URL="+api, "LEAT_TEST_DIR="+marks)...)
	out, err := suite.CombinedOutput()
	t.Logf("%s -m unittest discover -s tests -v:\n%s", filepath.Base(py), out)
	if err != nil {
		t.Fatalf("the Python suite failed: %v", err)
	}
	ran := regexp.MustCompile(`(?m)^Ran (\d+) tests? in `).FindSubmatch(out)
	if ran == nil {
		t.Fatal("the Python suite printed no \"Ran N tests\" line")
	}
	if n, _ := strconv.Atoi(string(ran[1])); n == 0 {
		t.Fatal("the Python suite ran no test")
	}
	if bytes.Contains(out, []byte("skipped=")) {
		t.Fatal("the Python suite skipped tests: they must all run here")
	}

	// What a handler printed, wrote to file descriptor 1 and logged with
	// ctx.log is in its task's log.
	id, err := os.ReadFile(filepath.Join(marks, "printed-task"))
	if err != nil {
		t.Fatal(err)
	}
	logs, err := plain.Logs(ctx, string(id))
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, l := range logs {
		lines = append(lines, l.Line)
	}
	all := strings.Join(lines, "\n")
	for _, want := range []string{"a line of the log of " + string(id), "a stray print, which must not reach the protocol", "written to file descriptor 1"} {
		if !strings.Contains(all, want) {
			t.Errorf("the log of task %s has no line %q:\n%s", id, want, all)
		}
	}

	for _, w := range workers {
		w.stop(t)
	}
	serve.stop(t)
}

// TestPipInstallOffline installs the package with pip into a fresh virtual
// environment with no package index (PIP_NO_INDEX), imports it from there,
// and runs examples/tasks-python/handler.py with that environment's
// python under "leat worker --test-input".
func TestPipInstallOffline(t *testing.T) {
	py := needPython(t)
	here, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	venv, vpy, env := installedVenv(t, py, here, dir)
	check := exec.Command(vpy, "-c", "import json, leat; print(json.dumps({'file': leat.__file__, 'version': leat.__version__, 'client': callable(leat.Client)}))")
	check.Env, check.Dir = env, dir
	out, err := check.Output()
	if err != nil {
		t.Fatalf("import leat: %v", err)
	}
	var got struct {
		File    string
		Version string
		Client  bool
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("%s: %v", out, err)
	}
	version, err := os.ReadFile(filepath.Join(here, "src", "leat", "_version.py"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(got.File, venv+string(filepath.Separator)) || !got.Client ||
		!bytes.Contains(version, []byte(`__version__ = "`+got.Version+`"`)) {
		t.Fatalf("import leat in the virtual environment: %+v (want a file under %s and the version of _version.py)", got, venv)
	}

	// The example handler, with leat from the virtual environment.
	handler, err := filepath.Abs("../../examples/tasks-python/handler.py")
	if err != nil {
		t.Fatal(err)
	}
	run := exec.Command(leatBinary(t), "--redis", "redis://127.0.0.1:1", "worker", "--exec", vpy+" "+handler,
		"--test-input", `{"text": "to be or not", "report": true}`)
	run.Env, run.Dir = env, dir
	var stderr bytes.Buffer
	run.Stderr = &stderr
	out, err = run.Output()
	if err != nil {
		t.Fatalf("leat worker --test-input: %v\n%s%s", err, out, stderr.String())
	}
	lines := bufio.NewScanner(bytes.NewReader(out))
	var last string
	partials := 0
	for lines.Scan() {
		last = lines.Text()
		if strings.HasPrefix(last, "partial ") {
			partials++
		}
	}
	if partials != 4 || last != `result {"words":4,"counts":{"to":1,"be":1,"or":1,"not":1}}` {
		t.Fatalf("leat worker --test-input printed:\n%s", out)
	}
}

// installedVenv creates a virtual environment in dir and installs the
// package in here into it with pip, offline (PIP_NO_INDEX: what pip needs
// comes from the package's directory). It returns the environment's
// directory, its python and the environment variables to run it with.
func installedVenv(t *testing.T, py, here, dir string) (venv, vpy string, env []string) {
	t.Helper()
	venv = filepath.Join(dir, "venv")
	if out, err := exec.Command(py, "-m", "venv", venv).CombinedOutput(); err != nil {
		if bytes.Contains(out, []byte("ensurepip")) && os.Getenv("CI") != "true" {
			t.Skipf("python3 -m venv cannot install pip here (Debian: apt-get install python3-venv):\n%s", out)
		}
		t.Fatalf("python3 -m venv: %v\n%s", err, out)
	}
	vpy = filepath.Join(venv, "bin", "python")
	env = append(os.Environ(), "PIP_NO_INDEX=1", "PIP_FIND_LINKS=", "PIP_DISABLE_PIP_VERSION_CHECK=1",
		"PIP_CONFIG_FILE="+os.DevNull, "PYTHONPATH=", "PYTHONDONTWRITEBYTECODE=1")
	pip := exec.Command(vpy, "-m", "pip", "install", here)
	pip.Env, pip.Dir = env, dir
	if out, err := pip.CombinedOutput(); err != nil {
		t.Fatalf("pip install %s: %v\n%s", here, err, out)
	}
	return venv, vpy, env
}
