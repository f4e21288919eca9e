package cmd

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/leatdev/leat/app"
	"github.com/leatdev/leat/internal/tools/redistest"
	"github.com/leatdev/leat/task"
)

// logHandler is a shell handler process writing two stderr lines per task.
const logHandler = `echo '{"status":"ready"}'
while read -r line; do
  id=$(printf '%s' "$line" | sed 's/.*"task_id":"\([^"]*\)".*/\1/')
  echo "starting $id" >&2
  echo "second line" >&2
  printf '{"task_id":"%s","result":1}\n' "$id"
done
`

// TestTasksLogs: a subprocess handler's stderr lines are kept with their
// task; "tasks logs ID" prints them in order after the task ended, and the
// log expires with the task.
func TestTasksLogs(t *testing.T) {
	t.Parallel()
	s := newShop(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	script := filepath.Join(t.TempDir(), "handler.sh")
	if err := os.WriteFile(script, []byte(logHandler), 0o600); err != nil {
		t.Fatal(err)
	}
	a, err := app.New(app.Config{Name: "shop", Client: s.client, KeyPrefix: s.keys.Prefix,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	q, err := task.Declare[json.RawMessage, json.RawMessage](a, "logged")
	if err != nil {
		t.Fatal(err)
	}
	id, err := q.Enqueue(ctx, json.RawMessage(`{}`), task.WithTimeout(time.Second), task.WithRetention(2*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	start(t, nil, s.quiet("worker", "--queue", "logged", "--exec", "sh "+script, "--grace", "1s")...)
	if _, err := q.Result(ctx, id); err != nil {
		t.Fatal(err)
	}
	var out string
	redistest.Eventually(t, 10*time.Second, "both log lines", func() bool {
		r := run(t, nil, "", s.quiet("tasks", "logs", id)...)
		out = r.stdout
		return r.status == 0 && strings.Count(out, "\n") == 2
	})
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if !strings.HasSuffix(lines[0], "#1  starting "+id) || !strings.HasSuffix(lines[1], "#1  second line") {
		t.Fatalf("logs:\n%s", out)
	}
	logKey := s.keys.TaskLogsPrefix("logged") + id
	if ttl := s.client.PTTL(ctx, logKey).Val(); ttl <= 0 || ttl > 3*time.Second {
		t.Fatalf("log TTL %s, want at most the timeout plus the retention", ttl)
	}
	redistest.Eventually(t, 10*time.Second, "the log to expire with its task", func() bool {
		return s.client.Exists(ctx, logKey, s.keys.TaskPrefix("logged")+id).Val() == 0
	})
	r := run(t, nil, "", s.quiet("tasks", "logs", id)...)
	wantFailure(t, r, 2, "not found")
}

// TestEnqueueWebhook: "enqueue --webhook" has the task's outcome POSTed;
// "tasks show" shows the delivery; a URL that is not http(s) is refused.
func TestEnqueueWebhook(t *testing.T) {
	t.Parallel()
	s := newShop(t)
	got := make(chan string, 4)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got <- string(b)
	}))
	defer srv.Close()
	runTaskWorker(t, s)
	r := run(t, nil, "", s.args("enqueue", "--webhook", "ftp://example.com", "greet", `{"name":"ada"}`)...)
	wantFailure(t, r, 2, "http or https")
	// The endpoint listens on a loopback address: refused unless allowed.
	r = run(t, nil, "", s.args("enqueue", "--webhook", srv.URL, "greet", `{"name":"ada"}`)...)
	wantFailure(t, r, 2, "loopback")
	r = run(t, nil, "", s.args("--webhook-allow", "127.0.0.1", "enqueue", "--webhook", srv.URL, "--webhook-secret", "hunter2", "greet", `{"name":"ada"}`)...)
	wantFailure(t, r, 2, "webhook secret")
	r = run(t, nil, "", s.args("--webhook-allow", "127.0.0.1", "enqueue", "--webhook", srv.URL, "greet", `{"name":"ada"}`)...)
	if r.status != 0 {
		t.Fatalf("%+v", r)
	}
	id := strings.TrimSpace(r.stdout)
	select {
	case body := <-got:
		if !strings.Contains(body, `"id":"`+id+`"`) || !strings.Contains(body, `"result":"hello ada"`) {
			t.Fatalf("body %s", body)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("no webhook")
	}
	redistest.Eventually(t, 10*time.Second, "the delivery recorded", func() bool {
		r = run(t, nil, "", s.args("tasks", "show", id)...)
		return strings.Contains(r.stdout, "delivered, 1 attempts")
	})
	if !strings.Contains(r.stdout, srv.URL) {
		t.Fatalf("%+v", r)
	}
}

// TestWorkerExecReady: a worker running a subprocess handler is not ready
// on /readyz while no handler process is ready, and ready once one is,
// before any task.
func TestWorkerExecReady(t *testing.T) {
	t.Parallel()
	s := newShop(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	a, err := app.New(app.Config{Name: "shop", Client: s.client, KeyPrefix: s.keys.Prefix,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	q, err := task.Declare[json.RawMessage, json.RawMessage](a, "ready")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := q.Counts(ctx); err != nil {
		t.Fatal(err)
	}
	// Record the queue for the workers below.
	if _, err := q.Enqueue(ctx, json.RawMessage(`{}`), task.Delay(time.Hour)); err != nil {
		t.Fatal(err)
	}

	addr := freeAddr(t)
	b := start(t, nil, s.quiet("worker", "--queue", "ready", "--exec", "sleep 3600", "--start-timeout", "100ms", "--metrics-addr", addr)...)
	redistest.Eventually(t, 20*time.Second, "/readyz not ready", func() bool {
		code, body := httpGet(t, "http://"+addr+"/readyz")
		return code == http.StatusServiceUnavailable && strings.Contains(body, "no handler process ready")
	})
	if code, _ := httpGet(t, "http://"+addr+"/healthz"); code != http.StatusOK {
		t.Errorf("/healthz: %d", code)
	}
	if r := b.stop(t); r.status != 0 {
		t.Fatalf("worker: %+v", r)
	}

	script := filepath.Join(t.TempDir(), "handler.sh")
	if err := os.WriteFile(script, []byte(logHandler), 0o600); err != nil {
		t.Fatal(err)
	}
	addr = freeAddr(t)
	b = start(t, nil, s.quiet("worker", "--queue", "ready", "--exec", "sh "+script, "--metrics-addr", addr)...)
	redistest.Eventually(t, 20*time.Second, "/readyz ready", func() bool {
		code, _ := httpGet(t, "http://"+addr+"/readyz")
		return code == http.StatusOK
	})
	if r := b.stop(t); r.status != 0 {
		t.Fatalf("worker: %+v", r)
	}
}
