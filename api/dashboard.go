package api

import (
	"embed"
	"net/http"
)

// The dashboard is a page and its script and style sheet, served as they
// are (no build step). They hold no data, so they are served without the
// token; the page asks for it when the API answers 401.
//
//go:embed dashboard
var dashboardFiles embed.FS

// dashboardPolicy confines the page to its own files and the API.
const dashboardPolicy = "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'"

// dashboardPaths are the dashboard's files by path.
var dashboardPaths = map[string]string{
	"/":                      "dashboard/index.html",
	"/dashboard/app.js":      "dashboard/app.js",
	"/dashboard/flows.js":    "dashboard/flows.js",
	"/dashboard/queueops.js": "dashboard/queueops.js",
	"/dashboard/style.css":   "dashboard/style.css",
}

// dashboard serves the page at / and its files under /dashboard/.
func dashboard(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Security-Policy", dashboardPolicy)
	w.Header().Set("Referrer-Policy", "no-referrer")
	w.Header().Set("Cache-Control", "no-cache")
	http.ServeFileFS(w, r, dashboardFiles, dashboardPaths[r.URL.Path])
}

// info is the answer of GET /v1/info.
type info struct {
	App      string `json:"app"`
	ReadOnly bool   `json:"read_only"`
	Version  string `json:"version"`
}

func (h *handler) info(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, info{App: h.a.Name(), ReadOnly: h.opts.ReadOnly, Version: h.opts.Version})
}
