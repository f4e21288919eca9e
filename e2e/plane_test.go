package e2e_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/leatdev/leat/internal/tools/redistest"
)

// The control plane's acceptance test uses only the leat binary, python3
// and git: a control plane and two workers started with only --server and
// a token run a deployment from a local git repository with a
// requirements.txt (the Python SDK, installed offline); moving the ref
// rolls both workers to the new revision while 1,000 tasks flow, none
// lost; a handler killed mid-task has its task retried; a wrong token is
// refused and logged; a worker killed is replaced by one started with the
// same two settings.

// planeHandler is the deployment's handler; VERSION changes between the
// repository's commits.
const planeHandler = `import os, time
import leat

VERSION = %q

@leat.task
def handle(payload, ctx):
    hold = payload.get("hold")
    if hold and ctx.attempt == 1:
        with open(hold + ".tmp", "w") as f:
            f.write(str(os.getpid()))
        os.rename(hold + ".tmp", hold)
        time.sleep(300)
    time.sleep(0.005)
    return {"revision": os.environ["LEAT_REVISION"], "version": VERSION, "n": payload.get("n"), "attempt": ctx.attempt}

if __name__ == "__main__":
    leat.main()
`

const planePools = `pools:
  py:
    token_env: POOL_TOKEN
    queues: [words]
    deployment: words
    heartbeat: 500ms
deployments:
  words:
    git: %s
    ref: main
    poll: 1s
    setup:
      - python3 -m venv .venv
      - .venv/bin/pip install -r requirements.txt
    start: .venv/bin/python handler.py
    env:
      PIP_NO_INDEX: "1"
      PIP_DISABLE_PIP_VERSION_CHECK: "1"
      PIP_CONFIG_FILE: /dev/null
`

// planeProc is a process of the test, its output kept.
type planeProc struct {
	cmd *exec.Cmd
	out *redistest.Buffer
}

// cleanEnv is the test's environment without leat's variables.
func cleanEnv(extra ...string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "LEAT_") {
			env = append(env, kv)
		}
	}
	return append(env, extra...)
}

func startProc(t *testing.T, env []string, name string, args ...string) *planeProc {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Env = env
	p := &planeProc{cmd: cmd, out: &redistest.Buffer{}}
	cmd.Stdout, cmd.Stderr = p.out, p.out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Signal(syscall.SIGTERM)
			done := make(chan struct{})
			go func() { _ = cmd.Wait(); close(done) }()
			select {
			case <-done:
			case <-time.After(20 * time.Second):
				_ = cmd.Process.Kill()
				<-done
			}
		}
		if t.Failed() {
			t.Logf("%s:\n%s", strings.Join(cmd.Args, " "), p.out)
		}
	})
	return p
}

func needTools(t *testing.T) {
	t.Helper()
	for _, tool := range []string{"python3", "git"} {
		if _, err := exec.LookPath(tool); err != nil {
			if os.Getenv("CI") == "true" {
				t.Fatalf("%s is missing (scripts/test installs it)", tool)
			}
			t.Skipf("%s is missing (scripts/test installs it)", tool)
		}
	}
	if err := exec.Command("python3", "-c", "import ensurepip, venv").Run(); err != nil {
		t.Skip("python3's venv is missing (scripts/test installs python3-venv)")
	}
}

// buildLeat builds the standalone binary into dir.
func buildLeat(t *testing.T, dir string) string {
	t.Helper()
	bin := filepath.Join(dir, "leat")
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/leatdev/leat/cmd/leat").CombinedOutput(); err != nil {
		t.Fatalf("build leat: %v\n%s", err, out)
	}
	return bin
}

// gitRun runs git in dir and returns its trimmed output.
func gitRun(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = cleanEnv("GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com", "GIT_COMMITTER_NAME=t",
		"GIT_COMMITTER_EMAIL=t@example.com", "GIT_CONFIG_NOSYSTEM=1", "HOME="+dir)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

// commit writes the handler with version into repo and commits it.
func commit(t *testing.T, repo, version string) string {
	t.Helper()
	if err := os.WriteFile(filepath.Join(repo, "handler.py"), fmt.Appendf(nil, planeHandler, version), 0o644); err != nil {
		t.Fatal(err)
	}
	gitRun(t, repo, "add", "-A")
	gitRun(t, repo, "commit", "-q", "-m", "handler "+version)
	return gitRun(t, repo, "rev-parse", "HEAD")
}

// api is a client of the served API.
type planeAPI struct {
	t     *testing.T
	base  string
	token string
}

func (a planeAPI) do(method, path, token string, body any) (int, []byte) {
	a.t.Helper()
	var r io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		r = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, a.base+path, r)
	if err != nil {
		a.t.Fatal(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		a.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

type planeWorker struct {
	ID       string `json:"id"`
	Pool     string `json:"pool"`
	Revision string `json:"revision"`
	Desired  string `json:"desired_revision"`
	Health   string `json:"health"`
	Error    string `json:"error"`
	Setup    *struct {
		Revision string `json:"revision"`
		OK       bool   `json:"ok"`
		Error    string `json:"error"`
	} `json:"setup"`
}

// workers returns the live workers GET /v1/workers lists.
func (a planeAPI) workers() []planeWorker {
	a.t.Helper()
	status, b := a.do("GET", "/v1/workers", a.token, nil)
	if status != 200 {
		a.t.Fatalf("GET /v1/workers: %d %s", status, b)
	}
	var v struct{ Workers []planeWorker }
	if err := json.Unmarshal(b, &v); err != nil {
		a.t.Fatal(err)
	}
	return v.Workers
}

// allAt reports whether n workers run rev, healthy, and no other is listed.
func (a planeAPI) allAt(n int, rev string) bool {
	ws := a.workers()
	if len(ws) != n {
		return false
	}
	for _, w := range ws {
		if w.Revision != rev || w.Health != "ok" || w.Setup == nil || !w.Setup.OK {
			return false
		}
	}
	return true
}

func (a planeAPI) enqueue(payload any) string {
	a.t.Helper()
	status, b := a.do("POST", "/v1/queues/words/tasks", a.token, map[string]any{"payload": payload})
	if status != 200 {
		a.t.Fatalf("enqueue: %d %s", status, b)
	}
	var v struct{ ID string }
	_ = json.Unmarshal(b, &v)
	return v.ID
}

type planeTask struct {
	State    string `json:"state"`
	Attempts int    `json:"attempts"`
	Result   struct {
		Revision string `json:"revision"`
		Version  string `json:"version"`
		N        int    `json:"n"`
		Attempt  int    `json:"attempt"`
	} `json:"result"`
}

func (a planeAPI) task(id string) planeTask {
	a.t.Helper()
	status, b := a.do("GET", "/v1/tasks/"+id, a.token, nil)
	if status != 200 {
		a.t.Fatalf("GET task %s: %d %s", id, status, b)
	}
	var v planeTask
	if err := json.Unmarshal(b, &v); err != nil {
		a.t.Fatal(err)
	}
	return v
}

var servingAt = regexp.MustCompile(`serving app "[^"]+" on (http://[0-9.]+:[0-9]+)`)

func TestControlPlane(t *testing.T) {
	needTools(t)
	dir := t.TempDir()
	bin := buildLeat(t, dir)
	sdk, err := filepath.Abs(filepath.Join("..", "sdk", "python"))
	if err != nil {
		t.Fatal(err)
	}

	// The deployment's repository: a handler and its requirements (the
	// SDK, from a local path: pip needs no index).
	repo := filepath.Join(dir, "repo")
	if err := os.Mkdir(repo, 0o755); err != nil {
		t.Fatal(err)
	}
	gitRun(t, repo, "init", "-q", "-b", "main")
	if err := os.WriteFile(filepath.Join(repo, "requirements.txt"), []byte(sdk+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	rev1 := commit(t, repo, "one")

	pools := filepath.Join(dir, "pools.yaml")
	if err := os.WriteFile(pools, fmt.Appendf(nil, planePools, repo), 0o644); err != nil {
		t.Fatal(err)
	}
	const poolToken, apiToken = "pool-token-0123456789abcdef", "api-token-0123456789abcdef"
	global := []string{"--redis", redistest.URL(t), "--app", "words", "--prefix", redistest.Prefix(t)}
	serve := startProc(t, cleanEnv("POOL_TOKEN="+poolToken, "LEAT_SERVE_TOKEN="+apiToken), bin,
		append(global, "serve", "--addr", "127.0.0.1:0", "--pools", pools)...)
	var base string
	redistest.Eventually(t, 30*time.Second, "leat serve to listen", func() bool {
		m := servingAt.FindStringSubmatch(serve.out.String())
		if m != nil {
			base = m[1]
		}
		return m != nil
	})
	api := planeAPI{t: t, base: base, token: apiToken}

	worker := func(name string) *planeProc {
		return startProc(t, cleanEnv("LEAT_WORKER_TOKEN="+poolToken), bin,
			"worker", "--server", base, "--deploy-dir", filepath.Join(dir, name), "--start-timeout", "15s")
	}
	w1, w2 := worker("w1"), worker("w2")
	redistest.Eventually(t, 3*time.Minute, "both workers to run the first revision", func() bool { return api.allAt(2, rev1) })

	// A wrong token is refused, said nowhere but in the log, with the
	// address it came from; a worker holding one stops with the reason.
	status, body := api.do("POST", "/v1/workers/register", "wrong-token-0123456789", map[string]any{"host": "x"})
	if status != 401 || bytes.Contains(body, []byte("py")) {
		t.Fatalf("register with a wrong token: %d %s", status, body)
	}
	if status, _ := api.do("POST", "/v1/workers/register", apiToken, map[string]any{"host": "x"}); status != 401 {
		t.Fatalf("register with the API token: %d", status)
	}
	redistest.Eventually(t, 10*time.Second, "the refusal in the log", func() bool {
		return strings.Contains(serve.out.String(), "worker token refused") && strings.Contains(serve.out.String(), "remote=127.0.0.1:")
	})
	bad := startProc(t, cleanEnv("LEAT_WORKER_TOKEN=wrong-token-0123456789"), bin, "worker", "--server", base, "--deploy-dir", filepath.Join(dir, "bad"))
	if err := bad.cmd.Wait(); err == nil || !strings.Contains(bad.out.String(), "refused the worker token") {
		t.Fatalf("worker with a wrong token: %v\n%s", err, bad.out)
	}

	// A handler process killed mid-task: the task runs again.
	hold := filepath.Join(dir, "hold.pid")
	held := api.enqueue(map[string]any{"hold": hold})
	var pid int
	redistest.Eventually(t, time.Minute, "the held task to start", func() bool {
		b, err := os.ReadFile(hold)
		pid, _ = strconv.Atoi(string(b))
		return err == nil && pid > 0
	})
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	redistest.Eventually(t, time.Minute, "the killed task to succeed", func() bool { return api.task(held).State == "succeeded" })
	if got := api.task(held); got.Attempts != 2 || got.Result.Attempt != 2 {
		t.Fatalf("killed task: %+v, want it succeeded on its second attempt", got)
	}

	// 1,000 tasks flow while the ref moves: both workers roll to the new
	// revision, and every task completes, on one revision or the other.
	// Tasks keep coming through the rollout, one every 50ms, keeping the
	// last 100 for after it.
	ids := make([]string, 0, 1000)
	for n := range 200 {
		ids = append(ids, api.enqueue(map[string]any{"n": n}))
	}
	rev2 := commit(t, repo, "two")
	deadline := time.Now().Add(3 * time.Minute)
	for !api.allAt(2, rev2) && time.Now().Before(deadline) {
		if len(ids) < 900 {
			ids = append(ids, api.enqueue(map[string]any{"n": len(ids)}))
		}
		time.Sleep(50 * time.Millisecond)
	}
	for len(ids) < 1000 {
		ids = append(ids, api.enqueue(map[string]any{"n": len(ids)}))
	}
	redistest.Eventually(t, 3*time.Minute, "both workers to run the second revision", func() bool { return api.allAt(2, rev2) })
	seen := map[string]int{}
	for i, id := range ids {
		var got planeTask
		redistest.Eventually(t, 2*time.Minute, "task "+id+" to succeed", func() bool {
			got = api.task(id)
			return got.State == "succeeded"
		})
		if got.Result.N != i || got.Result.Revision != rev1 && got.Result.Revision != rev2 ||
			(got.Result.Revision == rev1) != (got.Result.Version == "one") {
			t.Fatalf("task %d: %+v (revisions %s, %s)", i, got, rev1, rev2)
		}
		seen[got.Result.Version]++
	}
	if seen["one"] == 0 || seen["two"] == 0 {
		t.Fatalf("tasks per version %v: want both revisions to have run tasks while the ref moved", seen)
	}
	t.Logf("tasks per version: %v", seen)

	// Workers are stateless: one killed is replaced by one started with the
	// same URL and token, which takes over.
	before := map[string]bool{}
	for _, w := range api.workers() {
		before[w.ID] = true
	}
	_ = w2.cmd.Process.Kill()
	_ = w2.cmd.Wait()
	w3 := worker("w3")
	redistest.Eventually(t, 3*time.Minute, "the new worker to run the second revision beside the first", func() bool {
		fresh := 0
		for _, w := range api.workers() {
			if !before[w.ID] {
				fresh++
			}
		}
		return fresh == 1 && api.allAt(2, rev2)
	})
	last := api.enqueue(map[string]any{"n": 1000})
	redistest.Eventually(t, time.Minute, "a task after the replacement", func() bool { return api.task(last).State == "succeeded" })

	// A revision whose setup fails: the workers keep running the one
	// before and say why.
	if err := os.WriteFile(filepath.Join(repo, "requirements.txt"), []byte(filepath.Join(dir, "no-such-package")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	rev3 := commit(t, repo, "three")
	redistest.Eventually(t, 3*time.Minute, "both workers to report the failed setup", func() bool {
		ws := api.workers()
		for _, w := range ws {
			if w.Revision != rev2 || w.Desired != rev3 || w.Health != "degraded" || w.Setup == nil || w.Setup.OK ||
				w.Setup.Revision != rev3 || !strings.Contains(w.Setup.Error, "setup step 2") || !strings.Contains(w.Error, "no-such-package") {
				return false
			}
		}
		return len(ws) == 2
	})
	after := api.enqueue(map[string]any{"n": 1001})
	redistest.Eventually(t, time.Minute, "a task after the failed setup", func() bool { return api.task(after).State == "succeeded" })
	if got := api.task(after); got.Result.Revision != rev2 {
		t.Fatalf("task after the failed setup: %+v, want it run by %s", got, rev2)
	}
	// A revision whose handler cannot start: set up, but not rolled out.
	if err := os.WriteFile(filepath.Join(repo, "requirements.txt"), []byte(sdk+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(repo, "handler.py"), []byte("raise SystemExit('cannot start')\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	gitRun(t, repo, "commit", "-q", "-am", "broken handler")
	rev4 := gitRun(t, repo, "rev-parse", "HEAD")
	redistest.Eventually(t, 3*time.Minute, "both workers to report the handler that does not start", func() bool {
		ws := api.workers()
		for _, w := range ws {
			if w.Revision != rev2 || w.Desired != rev4 || w.Health != "degraded" || w.Setup == nil || !w.Setup.OK ||
				w.Setup.Revision != rev4 || !strings.Contains(w.Error, "did not start") || !strings.Contains(w.Error, "cannot start") {
				return false
			}
		}
		return len(ws) == 2
	})
	after = api.enqueue(map[string]any{"n": 1002})
	redistest.Eventually(t, time.Minute, "a task after the failed start", func() bool { return api.task(after).State == "succeeded" })
	if got := api.task(after); got.Result.Revision != rev2 {
		t.Fatalf("task after the failed start: %+v, want it run by %s", got, rev2)
	}

	for _, w := range []*planeProc{w1, w3} {
		_ = w.cmd.Process.Signal(syscall.SIGTERM)
		if err := w.cmd.Wait(); err != nil {
			t.Errorf("worker stopped with %v", err)
		}
	}
}
