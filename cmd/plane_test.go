package cmd

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

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
