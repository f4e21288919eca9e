package controlplane_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/leatdev/leat/controlplane"
	"github.com/leatdev/leat/internal/tools/redistest"
	"github.com/redis/go-redis/v9"
)

func TestMain(m *testing.M) { redistest.Main(m) }

const (
	revA = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
	revB = "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
)

type syncLog struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *syncLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *syncLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// plane is a control plane of two pools served by httptest, its source's
// revision set by the test.
type plane struct {
	p      *controlplane.Plane
	file   *controlplane.File
	srv    *httptest.Server
	c      *redis.Client
	prefix string
	log    *syncLog
	rev    atomic.Value
}

func newPlane(t *testing.T) *plane {
	t.Helper()
	c, prefix := redistest.Client(t)
	const text = `pools:
  gpu:
    token_env: GPU
    queues: [inference]
    deployment: ml
    heartbeat: 500ms
  cpu:
    token_env: CPU
    queues: [words]
    deployment: ml
    heartbeat: 500ms
    redis:
      url_env: CPU_URL
deployments:
  ml:
    git: /srv/ml.git
    poll: 1s
    start: ./run
`
	path := writeFile(t, "pools.yaml", text)
	f, err := controlplane.Load(path, env(map[string]string{"GPU": "gpu-token-0123456789", "CPU": "cpu-token-0123456789",
		"CPU_URL": "redis://operator:secret@10.1.1.1:6379"}))
	if err != nil {
		t.Fatal(err)
	}
	pl := &plane{c: c, prefix: prefix, log: &syncLog{}, file: f}
	pl.rev.Store(revA)
	pl.p, err = controlplane.New(controlplane.Config{File: f, Client: c, App: "shop", Prefix: prefix, RedisURL: redistest.URL(t),
		APIToken: "api-token-0123456789", Logger: slog.New(slog.NewTextHandler(pl.log, nil)),
		Resolve: func(context.Context, controlplane.Source) (string, error) { return pl.rev.Load().(string), nil }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Do(context.Background(), "ACL", "DELUSER", prefix+"-shop-gpu") })
	if err := pl.p.Prepare(context.Background()); err != nil {
		t.Fatal(err)
	}
	pl.srv = httptest.NewServer(pl.p.Handler())
	t.Cleanup(pl.srv.Close)
	return pl
}

func (pl *plane) post(t *testing.T, path, token, contentType, body string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest("POST", pl.srv.URL+path, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+token)
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.Header.Get("Cache-Control") != "no-store" {
		t.Errorf("%s: Cache-Control %q", path, resp.Header.Get("Cache-Control"))
	}
	return resp.StatusCode, string(b)
}

func (pl *plane) workers(t *testing.T) []controlplane.Worker {
	t.Helper()
	v, err := controlplane.Read(context.Background(), pl.c, pl.prefix, "shop")
	if err != nil {
		t.Fatal(err)
	}
	return v.Workers
}

// A worker registers with its pool's token and gets a Redis user that can
// do what a worker does on the app's prefix and nothing else; its
// heartbeats are recorded and answered with the desired revision.
func TestRegisterAndHeartbeat(t *testing.T) {
	pl := newPlane(t)
	ctx := context.Background()
	cl, err := controlplane.NewClient(pl.srv.URL, "gpu-token-0123456789")
	if err != nil {
		t.Fatal(err)
	}
	reg, err := cl.Register(ctx, controlplane.Hello{Host: "h1", PID: 7, Version: "test"})
	if err != nil {
		t.Fatal(err)
	}
	if reg.App != "shop" || reg.Prefix != pl.prefix || reg.Revision != revA || reg.Pool != "gpu" ||
		strings.Join(reg.Queues, ",") != "inference" || reg.Heartbeat != 500*time.Millisecond || reg.Source.Git != "/srv/ml.git" {
		t.Fatalf("registration: %+v", reg)
	}
	// The pool's Redis user: worker commands on the prefix only.
	opt, err := redis.ParseURL(reg.RedisURL)
	if err != nil {
		t.Fatal(err)
	}
	if opt.Username != pl.prefix+"-shop-gpu" {
		t.Fatalf("user %q", opt.Username)
	}
	wc := redis.NewClient(opt)
	defer wc.Close()
	if err := wc.Set(ctx, pl.prefix+":x", "1", 0).Err(); err != nil {
		t.Fatalf("a worker command on the prefix: %v", err)
	}
	for _, refused := range [][]any{{"set", "other:x", "1"}, {"flushall"}, {"acl", "setuser", "x"}, {"config", "get", "*"}, {"keys", "*"}} {
		if err := wc.Do(ctx, refused...).Err(); err == nil || !strings.Contains(err.Error(), "NOPERM") {
			t.Errorf("%v: %v, want NOPERM", refused, err)
		}
	}

	// The cpu pool gets the operator's URL, and no user is made for it.
	cpu, _ := controlplane.NewClient(pl.srv.URL, "cpu-token-0123456789")
	creg, err := cpu.Register(ctx, controlplane.Hello{Host: "h2"})
	if err != nil || creg.RedisURL != "redis://operator:secret@10.1.1.1:6379" {
		t.Fatalf("cpu registration: %+v %v", creg, err)
	}

	beat := controlplane.Beat{Revision: revA, Digest: reg.Digest, Health: controlplane.HealthOK, Handlers: 2,
		Setup: &controlplane.SetupOutcome{Revision: revA, OK: true, At: time.Now()}}
	a, err := cl.Heartbeat(ctx, reg.ID, beat)
	if err != nil || a.Revision != revA || a.Digest != reg.Digest {
		t.Fatalf("heartbeat: %+v %v", a, err)
	}
	ws := pl.workers(t)
	if len(ws) != 2 || ws[1].ID != reg.ID || ws[1].Health != "ok" || ws[1].Revision != revA || ws[1].Handlers != 2 ||
		ws[1].Host != "h1" || ws[1].Setup == nil || !ws[1].Setup.OK || ws[0].Pool != "cpu" || ws[0].Health != "starting" {
		t.Fatalf("workers: %+v", ws)
	}

	// The source moves: the next answers name the new revision.
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); _ = pl.p.Run(runCtx) }()
	defer func() { stop(); <-done }()
	pl.rev.Store(revB)
	redistest.Eventually(t, 10*time.Second, "the new revision in a heartbeat's answer", func() bool {
		a, err := cl.Heartbeat(ctx, reg.ID, beat)
		return err == nil && a.Revision == revB
	})

	// Another replica, sharing only Redis, takes the worker's heartbeats.
	other, err := controlplane.New(controlplane.Config{File: pl.file, Client: pl.c, App: "shop", Prefix: pl.prefix,
		RedisURL: redistest.URL(t), Resolve: func(context.Context, controlplane.Source) (string, error) { return revB, nil }})
	if err != nil {
		t.Fatal(err)
	}
	replica := httptest.NewServer(other.Handler())
	defer replica.Close()
	cl2, _ := controlplane.NewClient(replica.URL, "gpu-token-0123456789")
	if a, err := cl2.Heartbeat(ctx, reg.ID, beat); err != nil || a.Revision != revB {
		t.Fatalf("heartbeat at another replica: %+v %v", a, err)
	}

	// Another pool's token cannot beat for this worker.
	if _, err := cpu.Heartbeat(ctx, reg.ID, beat); err != controlplane.ErrUnknownWorker {
		t.Fatalf("heartbeat with another pool's token: %v", err)
	}
	// Silent for three heartbeats, the worker is forgotten and told to
	// register again.
	redistest.Eventually(t, 10*time.Second, "the silent cpu worker to expire", func() bool {
		for _, w := range pl.workers(t) {
			if w.Pool == "cpu" {
				return false
			}
		}
		return true
	})
	if _, err := cpu.Heartbeat(ctx, creg.ID, beat); err != controlplane.ErrUnknownWorker {
		t.Fatalf("heartbeat of an expired worker: %v", err)
	}
}

// Wrong tokens, the API's token and bad bodies are refused, and nothing is
// stored; a wrong token is logged with its remote address and the answer
// says nothing more.
func TestRegisterRefuses(t *testing.T) {
	pl := newPlane(t)
	for _, tc := range []struct {
		name, token, ctype, body string
		status                   int
		code                     string
	}{
		{"wrong token", "wrong-token-0123456789", "application/json", `{"host":"h"}`, 401, "unauthorized"},
		{"api token", "api-token-0123456789", "application/json", `{"host":"h"}`, 401, "unauthorized"},
		{"no token", "", "application/json", `{"host":"h"}`, 401, "unauthorized"},
		{"prefix of a token", "gpu-token-012345678", "application/json", `{"host":"h"}`, 401, "unauthorized"},
		{"form", "gpu-token-0123456789", "text/plain", `{"host":"h"}`, 415, "bad_content_type"},
		{"unknown field", "gpu-token-0123456789", "application/json", `{"host":"h","admin":true}`, 400, "bad_request"},
		{"two values", "gpu-token-0123456789", "application/json", `{"host":"h"}{}`, 400, "bad_request"},
		{"control characters", "gpu-token-0123456789", "application/json", `{"host":"h\u001b[2J"}`, 400, "bad_request"},
		{"huge", "gpu-token-0123456789", "application/json", `{"host":"` + strings.Repeat("h", 70<<10) + `"}`, 400, "bad_request"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status, body := pl.post(t, "/v1/workers/register", tc.token, tc.ctype, tc.body)
			var e struct{ Code string }
			_ = json.Unmarshal([]byte(body), &e)
			if status != tc.status || e.Code != tc.code {
				t.Fatalf("%d %s, want %d %s", status, body, tc.status, tc.code)
			}
			if strings.Contains(body, "gpu") || strings.Contains(body, "redis") {
				t.Fatalf("answer leaks: %s", body)
			}
		})
	}
	if n := len(pl.workers(t)); n != 0 {
		t.Fatalf("%d workers stored", n)
	}
	if got := strings.Count(pl.log.String(), "worker token refused"); got != 4 || !strings.Contains(pl.log.String(), "remote=127.0.0.1:") {
		t.Fatalf("log:\n%s", pl.log)
	}

	// Heartbeats with values out of form are refused and change nothing.
	cl, _ := controlplane.NewClient(pl.srv.URL, "gpu-token-0123456789")
	reg, err := cl.Register(context.Background(), controlplane.Hello{Host: "h"})
	if err != nil {
		t.Fatal(err)
	}
	for _, body := range []string{
		`{"revision":"../../etc","health":"ok"}`, `{"health":"great"}`, `{"health":"ok","handlers":-1}`,
		`{"health":"ok","error":"` + strings.Repeat("e", 5000) + `"}`, `{"health":"ok","setup":{"revision":"x"}}`,
	} {
		if status, b := pl.post(t, "/v1/workers/"+reg.ID+"/heartbeat", "gpu-token-0123456789", "application/json", body); status != 400 {
			t.Errorf("heartbeat %.60s: %d %s", body, status, b)
		}
	}
	for _, id := range []string{"nobody", "gpu-0000000000000000", "..%2f..%2fx"} {
		if status, b := pl.post(t, "/v1/workers/"+id+"/heartbeat", "gpu-token-0123456789", "application/json", `{"health":"ok"}`); status != 404 {
			t.Errorf("heartbeat of %s: %d %s", id, status, b)
		}
	}
	if ws := pl.workers(t); len(ws) != 1 || ws[0].Health != "starting" {
		t.Fatalf("workers: %+v", ws)
	}
}

func TestNewRefusesAPIToken(t *testing.T) {
	path := writeFile(t, "pools.yaml", "pools:\n  p:\n    token_env: T\n    queues: [q]\n    deployment: d\ndeployments:\n  d:\n    path: /srv/d\n    start: ./run\n")
	f, err := controlplane.Load(path, env(map[string]string{"T": "shared-token-0123456789"}))
	if err != nil {
		t.Fatal(err)
	}
	c, _ := redistest.Client(t)
	if _, err := controlplane.New(controlplane.Config{File: f, Client: c, App: "a", APIToken: "shared-token-0123456789"}); err == nil ||
		!strings.Contains(err.Error(), "its token is the API's") {
		t.Fatalf("New: %v", err)
	}
}
