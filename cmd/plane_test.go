package cmd

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/leatdev/leat/controlplane"
	"github.com/leatdev/leat/internal/rdb"
)

// The Redis users the control plane creates for worker pools get exactly
// the worker's ACL that docs/configuration.md documents and TestMinimalACL
// proves sufficient.
func TestPoolUserHasWorkerACL(t *testing.T) {
	if !slices.Equal(rdb.WorkerCommands, minimalACL) {
		t.Fatalf("rdb.WorkerCommands differs from the documented worker ACL:\n%v\n%v", rdb.WorkerCommands, minimalACL)
	}
	doc, err := os.ReadFile(filepath.Join("..", "docs", "configuration.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(doc), "~leat:* &leat:* "+strings.Join(minimalACL, " ")+"\n") {
		t.Fatal("docs/configuration.md's worker ACL line differs from rdb.WorkerCommands")
	}
}

// A pools file with mistakes stops serve before it listens, each mistake
// named with its line; a worker needs its server's token and takes no
// queue or handler of its own.
func TestServePoolsRefused(t *testing.T) {
	s := newShop(t)
	bad := filepath.Join(t.TempDir(), "pools.yaml")
	text := "pools:\n  p:\n    token_env: LEAT_TEST_NO_SUCH_TOKEN\n    queues: [q]\n    deployment: e\n    colour: red\ndeployments:\n  d:\n    git: /srv/r\n    start: 5\n"
	if err := os.WriteFile(bad, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	r := run(t, nil, "", s.args("serve", "--pools", bad)...)
	wantFailure(t, r, 2, bad+": line 10: deployments.d.start: want a string, got int")
	if err := os.WriteFile(bad, []byte(strings.Replace(text, "start: 5", "start: ./run", 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	r = run(t, nil, "", s.args("serve", "--pools", bad)...)
	wantFailure(t, r, 2, "line 6: field colour not found")
	if err := os.WriteFile(bad, []byte(strings.Replace(strings.Replace(text, "start: 5", "start: ./run", 1), "    colour: red\n", "", 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	r = run(t, nil, "", s.args("serve", "--pools", bad)...)
	wantFailure(t, r, 2, `line 5: pools.p.deployment: deployment "e" is not declared`)

	r = run(t, nil, "", "worker", "--server", "http://127.0.0.1:1")
	wantFailure(t, r, 2, "LEAT_WORKER_TOKEN")
	t.Setenv("LEAT_WORKER_TOKEN", "tok")
	r = run(t, nil, "", "worker", "--server", "http://127.0.0.1:1", "--exec", "x")
	wantFailure(t, r, 2, "drop --exec")
	r = run(t, nil, "", "worker", "--server", "ftp://x")
	wantFailure(t, r, 2, "want http:// or https://")
}

// inspect --pools lists the control plane's workers and deployments.
func TestInspectPools(t *testing.T) {
	t.Parallel()
	s := newShop(t)
	r := run(t, nil, "", s.args("inspect", "--pools")...)
	if r.status != 0 || !strings.Contains(r.stdout, "no control plane workers") {
		t.Fatalf("no workers: %+v", r)
	}
	path := filepath.Join(t.TempDir(), "pools.yaml")
	text := "pools:\n  gpu:\n    token_env: T\n    queues: [emails]\n    deployment: ml\n    redis:\n      url_env: U\n" +
		"deployments:\n  ml:\n    git: /srv/ml.git\n    start: ./run\n"
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := controlplane.Load(path, func(k string) string {
		return map[string]string{"T": "gpu-token-0123456789", "U": "redis://127.0.0.1:1"}[k]
	})
	if err != nil {
		t.Fatal(err)
	}
	rev := strings.Repeat("a", 40)
	p, err := controlplane.New(controlplane.Config{File: f, Client: s.client, App: "shop", Prefix: s.keys.Prefix,
		Resolve: func(context.Context, controlplane.Source) (string, error) { return rev, nil }})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Prepare(context.Background()); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(p.Handler())
	defer srv.Close()
	cl, _ := controlplane.NewClient(srv.URL, "gpu-token-0123456789")
	reg, err := cl.Register(context.Background(), controlplane.Hello{Host: "m1"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cl.Heartbeat(context.Background(), reg.ID, controlplane.Beat{Health: controlplane.HealthFailing, Error: "setup failed\nmore",
		Setup: &controlplane.SetupOutcome{Revision: rev, Error: controlplane.Clean("setup step 1 (x): exit status 1\n\x1b[2Jlast\rline")}}); err != nil {
		t.Fatal(err)
	}
	r = run(t, nil, "", s.args("inspect", "--pools")...)
	for _, want := range []string{"ml  ", "aaaaaaaaaaaa", "git /srv/ml.git HEAD", "gpu", reg.ID, "m1", "- (wants aaaaaaaaaaaa)",
		"failing: setup failed", "emails", "aaaaaaaaaaaa failed: setup step 1 (x): exit status 1"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("inspect --pools does not show %q:\n%s", want, r.stdout)
		}
	}
	if strings.Contains(r.stdout, "\x1b") || r.status != 0 {
		t.Errorf("inspect --pools: %+v", r)
	}
	r = run(t, nil, "", s.args("inspect", "--pools", "--json")...)
	var v controlplane.View
	if err := json.Unmarshal([]byte(r.stdout), &v); err != nil || len(v.Workers) != 1 || v.Workers[0].ID != reg.ID || len(v.Deployments) != 1 {
		t.Fatalf("inspect --pools --json: %v %+v", err, r)
	}
}
