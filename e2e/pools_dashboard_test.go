package e2e_test

import (
	"context"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/leatdev/leat/api"
	"github.com/leatdev/leat/controlplane"
	"github.com/leatdev/leat/internal/tools/redistest"
)

// The overview shows the control plane's workers: pool, revision, health
// with its reason, queues and the last setup, failed ones in red.
func TestDashboardPools(t *testing.T) {
	s := newShop(t, 4, 0)
	srv := s.serve(api.Options{})
	pools := filepath.Join(t.TempDir(), "pools.yaml")
	file := "pools:\n  gpu:\n    token_env: T\n    queues: [emails]\n    deployment: ml\n" +
		"deployments:\n  ml:\n    git: /srv/ml.git\n    start: ./run\n"
	if err := os.WriteFile(pools, []byte(file), 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := controlplane.Load(pools, func(string) string { return "gpu-token-0123456789" })
	if err != nil {
		t.Fatal(err)
	}
	revA, revB := strings.Repeat("a", 40), strings.Repeat("b", 40)
	p, err := controlplane.New(controlplane.Config{File: f, Client: s.client, App: "shop", Prefix: s.prefix, RedisURL: redistest.URL(t),
		Logger: quiet(), Resolve: func(context.Context, controlplane.Source) (string, error) { return revB, nil }})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	t.Cleanup(func() { s.client.Do(context.Background(), "ACL", "DELUSER", s.prefix+"-shop-gpu") })
	if err := p.Prepare(ctx); err != nil {
		t.Fatal(err)
	}
	plane := httptest.NewServer(p.Handler())
	defer plane.Close()
	cl, err := controlplane.NewClient(plane.URL, "gpu-token-0123456789")
	if err != nil {
		t.Fatal(err)
	}
	ok, err := cl.Register(ctx, controlplane.Hello{Host: "m1"})
	if err != nil {
		t.Fatal(err)
	}
	bad, err := cl.Register(ctx, controlplane.Hello{Host: "m2"})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	if _, err := cl.Heartbeat(ctx, ok.ID, controlplane.Beat{Revision: revB, Health: controlplane.HealthOK, Handlers: 3,
		Setup: &controlplane.SetupOutcome{Revision: revB, OK: true, At: now}}); err != nil {
		t.Fatal(err)
	}
	if _, err := cl.Heartbeat(ctx, bad.ID, controlplane.Beat{Revision: revA, Health: controlplane.HealthDegraded, Handlers: 1,
		Error: "setup of revision bbbb failed", Setup: &controlplane.SetupOutcome{Revision: revB, Error: "setup step 2 (pip install): exit status 1", At: now}}); err != nil {
		t.Fatal(err)
	}

	b := browser(t)
	run(t, b, "open the overview", chromedp.Navigate(srv.URL+"/"), chromedp.WaitVisible(chromedp.CSS(`#ov-pools [data-pool-worker="`+bad.ID+`"]`)))
	row := func(id string) string { return text(t, b, `#ov-pools [data-pool-worker="`+id+`"]`) }
	if r := row(ok.ID); !strings.Contains(r, "gpu") || !strings.Contains(r, "m1") || !strings.Contains(r, "bbbbbbbbbbbb") ||
		!strings.Contains(r, "ok") || !strings.Contains(r, "emails") || !strings.Contains(r, "3") {
		t.Errorf("healthy worker's row: %q", r)
	}
	if r := row(bad.ID); !strings.Contains(r, "aaaaaaaaaaaa → bbbbbbbbbbbb") || !strings.Contains(r, "degraded") ||
		!strings.Contains(r, "failed") || !strings.Contains(r, "setup step 2 (pip install)") {
		t.Errorf("degraded worker's row: %q", r)
	}
	if h := text(t, b, "#ov-pools .panel-head"); !strings.Contains(h, "ml @ bbbbbbbbbbbb") {
		t.Errorf("deployments: %q", h)
	}
	screenshot(t, b, "LEAT_SCREENSHOT_POOLS")
}
