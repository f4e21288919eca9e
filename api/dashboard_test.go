package api_test

import (
	"strings"
	"testing"

	"github.com/leatdev/leat/api"
)

func TestDashboardFilesAndInfo(t *testing.T) {
	t.Parallel()
	e := newEnv(t, api.Options{Token: "tok", ReadOnly: true, Version: "v1.2.3"})
	// The page and its files need no token: they hold no data.
	for path, want := range map[string]string{
		"/":                      "text/html",
		"/dashboard/app.js":      "javascript",
		"/dashboard/flows.js":    "javascript",
		"/dashboard/queueops.js": "javascript",
		"/dashboard/style.css":   "text/css",
	} {
		res, err := e.srv.Client().Get(e.srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != 200 || !strings.Contains(res.Header.Get("Content-Type"), want) {
			t.Errorf("GET %s: %d %q", path, res.StatusCode, res.Header.Get("Content-Type"))
		}
		if csp := res.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "script-src 'self'") || !strings.Contains(csp, "connect-src 'self'") {
			t.Errorf("GET %s: policy %q", path, csp)
		}
	}
	if res, err := e.srv.Client().Head(e.srv.URL + "/"); err != nil || res.StatusCode != 200 {
		t.Errorf("HEAD /: %v %v", res, err)
	} else {
		res.Body.Close()
	}
	// Everything else does.
	for _, path := range []string{"/v1/info", "/dashboard/", "/dashboard/index.html", "/index.html", "/v1/overview"} {
		e.do(t, "GET", path, "").want(t, 401, "unauthorized")
	}
	e.do(t, "GET", "/dashboard/nope.js", "", "Authorization", "Bearer tok").want(t, 404, "no_endpoint")
	r := e.do(t, "GET", "/v1/info", "", "Authorization", "Bearer tok").want(t, 200, "")
	if r.body["app"] != "shop" || r.body["read_only"] != true || r.body["version"] != "v1.2.3" {
		t.Errorf("info: %s", r.raw)
	}
}
