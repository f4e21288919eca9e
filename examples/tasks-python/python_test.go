// Package taskspython holds the test of the Python handler example: two
// "leat worker --exec" processes run its tasks.
package taskspython

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/leatdev/leat/app"
	"github.com/leatdev/leat/internal/tools/redistest"
	"github.com/leatdev/leat/task"
)

func TestMain(m *testing.M) { redistest.Main(m) }

// TestTwoWorkerProcesses runs 1,000 tasks over two worker processes of the standalone leat binary at concurrency 4, each
// running handler.py in child processes: every task succeeds. The handlers
// import the leat package from sdk/python/src, as PYTHONPATH names it.
func TestTwoWorkerProcesses(t *testing.T) {
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("python3 is not installed (scripts/test installs it)")
	}
	const n = 1000
	c, prefix := redistest.Client(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	bin := filepath.Join(t.TempDir(), "leat")
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/leatdev/leat/cmd/leat").CombinedOutput(); err != nil {
		t.Fatalf("build leat: %v\n%s", err, out)
	}
	a, err := app.New(app.Config{Name: "words", Client: c, KeyPrefix: prefix, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	q, err := task.Declare[json.RawMessage, json.RawMessage](a, "count", task.Concurrency(4))
	if err != nil {
		t.Fatal(err)
	}
	ids := make([]string, n)
	for i := range ids {
		p, _ := json.Marshal(map[string]string{"text": strings.Repeat("w ", i%5+1)})
		if ids[i], err = q.Enqueue(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	sdk, err := filepath.Abs("../../sdk/python/src")
	if err != nil {
		t.Fatal(err)
	}
	var workers []*exec.Cmd
	var outs []*bytes.Buffer
	for i := range 2 {
		cmd := exec.Command(bin, "--redis", redistest.URL(t), "--prefix", prefix, "--app", "words",
			"worker", "--queue", "count", "--exec", "python3 handler.py", "--worker-id", "py"+string(rune('1'+i)))
		cmd.Env = append(os.Environ(), "PYTHONPATH="+sdk)
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		workers, outs = append(workers, cmd), append(outs, &out)
		t.Cleanup(func() { _ = cmd.Process.Kill() })
	}
	byWorker := map[string]int{}
	for i, id := range ids {
		in, err := q.Wait(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		var r struct{ Words int }
		if in.State != task.Succeeded || json.Unmarshal(in.Result, &r) != nil || r.Words != i%5+1 {
			t.Fatalf("task %d: %+v", i, in)
		}
		byWorker[in.Worker]++
	}
	t.Logf("tasks per worker: %v", byWorker)
	for i, cmd := range workers {
		_ = cmd.Process.Signal(syscall.SIGINT)
		if err := cmd.Wait(); err != nil {
			t.Errorf("worker %d: %v\n%s", i, err, outs[i])
		}
	}
}
