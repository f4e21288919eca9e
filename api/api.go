// Package api serves a leat app over HTTP as a JSON API: send records to
// its streams, enqueue tasks and run them synchronously, read their status,
// follow their progress and partial results as server-sent events, cancel,
// requeue and list them, submit flows (and run them synchronously), and
// read what package inspect reports.
//
// # Dashboard
//
// At / the handler serves a live dashboard of the app's streams, task
// queues and flows (each drawn as a graph): a page, with its scripts and
// style sheet under /dashboard/, embedded in the binary (plain JavaScript,
// no build step, nothing loaded from elsewhere). These files hold no data
// and are served without the token; the page reads everything through the
// API and, when the API answers 401, asks for the token once and keeps it
// in the tab's session storage. It polls every 2 seconds while the tab is
// visible and draws its charts from its own polling history.
//
// # Browsers
//
// A browser on the machine can reach a handler on 127.0.0.1 from any page
// it shows. The handler refuses writes from another origin (403
// cross_origin), writes with a body not declared application/json (415
// bad_content_type), and, without a token, Host names beyond loopback
// and Options.AllowedHosts (403 bad_host, against DNS rebinding).
//
// NewHandler returns the http.Handler; "leat serve" runs it, and a program
// can mount it in its own server. The endpoints are described in
// openapi.yaml, next to this file.
package api

import (
	"crypto/subtle"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/leatdev/leat/app"
	"github.com/leatdev/leat/inspect"
)

// Defaults of Options.
const (
	DefaultMaxBody = 1 << 20          // 1 MiB
	DefaultTimeout = 30 * time.Second // runsync without ?timeout
	DefaultMaxWait = 5 * time.Minute  // the longest ?timeout of runsync
)

// Options configure the handler.
type Options struct {
	// Token, when set, is required of every request as
	// "Authorization: Bearer TOKEN" (the scheme in any case).
	Token string
	// AllowedHosts are host names (without a port), besides loopback ones,
	// that a request's Host header may name. Without a Token only
	// loopback names (localhost, *.localhost, 127.0.0.0/8, [::1]) and these
	// are served, so that a page whose DNS name is rebound to 127.0.0.1
	// cannot use the API (403 bad_host); with a Token every name is served
	// unless AllowedHosts is set. Name here the host under which a proxy
	// serves the API.
	AllowedHosts []string
	// ReadOnly refuses every request that writes (403).
	ReadOnly bool
	// MaxBody bounds a request's body in bytes (413 beyond); default
	// DefaultMaxBody.
	MaxBody int64
	// MaxWait bounds the timeout of runsync; default DefaultMaxWait.
	MaxWait time.Duration
	// Version is the version GET /v1/info reports ("leat serve" gives
	// leat's); default "".
	Version string
	// MaxFollowers bounds the clients following task events at once
	// (GET .../tasks/{id}/events) and queue events (GET
	// /v1/queues/{queue}/events), over all tasks and queues: one more is answered
	// 503 too_many_followers with a Retry-After; default
	// DefaultMaxFollowers.
	MaxFollowers int
}

// handler serves one app.
type handler struct {
	a    *app.App
	opts Options
	in   *inspect.Inspector
	mux  *http.ServeMux
	g    *guard
	log  *slog.Logger

	follows *followers // the followers of task events
	watches *watchers  // the readers of queue events

	openMu sync.Mutex // serializes opening streams from the registry
}

// NewHandler returns the JSON API of app a. The app must stay open while
// the handler serves.
func NewHandler(a *app.App, opts Options) http.Handler {
	if opts.MaxBody <= 0 {
		opts.MaxBody = DefaultMaxBody
	}
	if opts.MaxWait <= 0 {
		opts.MaxWait = DefaultMaxWait
	}
	if opts.MaxFollowers <= 0 {
		opts.MaxFollowers = DefaultMaxFollowers
	}
	h := &handler{a: a, opts: opts, in: inspect.New(a.Client(), a.Config().KeyPrefix, a.Name()), mux: http.NewServeMux(),
		g: newGuard(opts), log: a.Logger(), follows: newFollowers(opts.MaxFollowers, a.Logger()),
		watches: newWatchers()}
	for _, rt := range h.routes() {
		var fn http.Handler = rt.fn
		if rt.write {
			fn = h.writing(rt.fn)
		}
		h.mux.Handle(rt.pattern, fn)
	}
	return h
}

// route is an endpoint: "METHOD PATH" and its handler; write endpoints
// are refused in read-only mode.
type route struct {
	pattern string
	fn      http.HandlerFunc
	write   bool
}

// routes returns every endpoint of the API (openapi.yaml documents each but
// the dashboard's files).
func (h *handler) routes() []route {
	read := func(pattern string, fn http.HandlerFunc) route { return route{pattern, fn, false} }
	write := func(pattern string, fn http.HandlerFunc) route { return route{pattern, fn, true} }
	return []route{
		read("GET /{$}", dashboard),
		read("GET /dashboard/app.js", dashboard),
		read("GET /dashboard/flows.js", dashboard),
		read("GET /dashboard/queueops.js", dashboard),
		read("GET /dashboard/style.css", dashboard),
		read("GET /v1/info", h.info),

		write("POST /v1/streams/{stream}/events", h.sendEvents),
		read("GET /v1/streams/{stream}", h.streamReport),
		read("GET /v1/streams/{stream}/processors/{processor}/tables/{table}", h.tableValues),
		read("GET /v1/streams/{stream}/processors/{processor}/dead", h.listDead),
		read("GET /v1/streams/{stream}/processors/{processor}/dead/{id}", h.showDead),
		write("POST /v1/streams/{stream}/processors/{processor}/dead/replay", h.replayDead),
		write("DELETE /v1/streams/{stream}/processors/{processor}/dead", h.purgeDead),
		read("GET /v1/overview", h.overview),
		read("GET /v1/workers", h.workers),

		read("GET /v1/queues", h.queues),
		read("GET /v1/queues/{queue}", h.queue),
		write("POST /v1/queues/{queue}/pause", h.pause),
		write("POST /v1/queues/{queue}/resume", h.resume),
		write("PUT /v1/queues/{queue}/rate", h.setRate),
		write("DELETE /v1/queues/{queue}/rate", h.clearRate),
		write("PUT /v1/queues/{queue}/concurrency", h.setConcurrency),
		write("DELETE /v1/queues/{queue}/concurrency", h.clearConcurrency),
		write("PUT /v1/queues/{queue}/global-concurrency", h.setGlobalConcurrency),
		write("POST /v1/queues/{queue}/dead/requeue", h.requeueDead),
		write("DELETE /v1/queues/{queue}/dead", h.deleteDead),
		write("POST /v1/queues/{queue}/drain", h.drain),
		write("POST /v1/queues/{queue}/clean", h.clean),
		write("DELETE /v1/queues/{queue}", h.obliterate),
		write("POST /v1/queues/{queue}/tasks", h.enqueue),
		read("GET /v1/queues/{queue}/tasks", h.listTasks),
		read("GET /v1/queues/{queue}/events", holdOpen(forever, h.queueEvents)),
		write("PUT /v1/queues/{queue}/events", h.setEvents),
		write("POST /v1/queues/{queue}/runsync", holdOpen(h.runSyncWait, h.runSync)),
		read("GET /v1/queues/{queue}/tasks/{id}", h.taskInfo),
		write("DELETE /v1/queues/{queue}/tasks/{id}", h.deleteTask),
		read("GET /v1/queues/{queue}/tasks/{id}/events", holdOpen(forever, h.taskEvents)),
		write("PATCH /v1/queues/{queue}/tasks/{id}", h.editTask),
		write("POST /v1/queues/{queue}/tasks/{id}/cancel", h.cancel),
		write("POST /v1/queues/{queue}/tasks/{id}/requeue", h.requeue),
		write("POST /v1/flows", h.submitFlow),
		write("POST /v1/flows/runsync", holdOpen(h.runSyncWait, h.runFlow)),
		read("GET /v1/flows", h.listFlows),
		read("GET /v1/flows/{id}", holdOpen(h.flowWait, h.getFlow)),
		write("POST /v1/flows/{id}/cancel", h.cancelFlow),
		read("GET /v1/tasks/{id}", h.taskInfo),
		write("DELETE /v1/tasks/{id}", h.deleteTask),
		read("GET /v1/tasks/{id}/events", holdOpen(forever, h.taskEvents)),
		write("PATCH /v1/tasks/{id}", h.editTask),
		write("POST /v1/tasks/{id}/cancel", h.cancel),
		write("POST /v1/tasks/{id}/requeue", h.requeue),
	}
}

// ServeHTTP checks a request in this order: its Host (bad_host), its
// token (unauthorized), for a write its origin (cross_origin) and content
// type (bad_content_type), its length (too_large); then the endpoint
// answers. Every answer but the dashboard's files is marked nosniff and
// no-store: it is JSON or events about live data, for no cache to keep.
func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	_, static := dashboardPaths[r.URL.Path]
	static = static && (r.Method == http.MethodGet || r.Method == http.MethodHead)
	w.Header().Set("X-Content-Type-Options", "nosniff")
	if !static {
		w.Header().Set("Cache-Control", "no-store")
	}
	if !h.g.check(w, r) {
		return
	}
	if h.opts.Token != "" && !static && !h.authorized(r) {
		w.Header().Set("WWW-Authenticate", `Bearer realm="leat"`)
		writeError(w, http.StatusUnauthorized, "unauthorized", "missing or wrong bearer token")
		return
	}
	if !h.g.checkWrite(w, r) {
		return
	}
	if r.ContentLength > h.opts.MaxBody {
		writeError(w, http.StatusRequestEntityTooLarge, "too_large", tooLarge(h.opts.MaxBody))
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, h.opts.MaxBody)
	h.mux.ServeHTTP(&muxWriter{ResponseWriter: w, route: r.Method + " " + r.URL.Path, noStore: !static, log: h.log}, r)
}

// authorized reports whether the request carries the token:
// "Authorization: Bearer TOKEN", the scheme in any case (RFC 7235).
func (h *handler) authorized(r *http.Request) bool {
	scheme, tok, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return false
	}
	tok = strings.TrimLeft(tok, " ")
	return subtle.ConstantTimeCompare([]byte(tok), []byte(h.opts.Token)) == 1
}

// writing wraps an endpoint that writes: refused in read-only mode.
func (h *handler) writing(fn http.HandlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if h.opts.ReadOnly {
			writeError(w, http.StatusForbidden, "read_only", "the API is read-only: "+r.Method+" "+r.URL.Path+" is refused")
			return
		}
		fn(w, r)
	})
}

// muxWriter turns the mux's plain-text 404 and 405 answers (no such
// endpoint, or not with this method) into the API's JSON errors; the
// endpoints themselves always answer JSON.
//
// It also keeps every answer of an endpoint no-store (the events' stream
// included), and carries the logger of internal errors.
type muxWriter struct {
	http.ResponseWriter
	route   string
	noStore bool
	log     *slog.Logger
	wrote   bool
	swallow bool
}

func (m *muxWriter) WriteHeader(code int) {
	if m.wrote {
		m.ResponseWriter.WriteHeader(code) // the server reports the superfluous call
		return
	}
	m.wrote = true
	if m.noStore {
		m.Header().Set("Cache-Control", "no-store")
	}
	if (code == http.StatusNotFound || code == http.StatusMethodNotAllowed) && m.Header().Get("Content-Type") == "text/plain; charset=utf-8" {
		m.swallow = true
		e := apiError{Error: "no endpoint " + m.route, Code: "no_endpoint"}
		if code == http.StatusMethodNotAllowed {
			e = apiError{Error: "method not allowed: " + m.route + " (allowed: " + m.Header().Get("Allow") + ")", Code: "method_not_allowed"}
		}
		m.Header().Set("Content-Type", "application/json")
		m.ResponseWriter.WriteHeader(code)
		_ = json.NewEncoder(m.ResponseWriter).Encode(e)
		return
	}
	m.ResponseWriter.WriteHeader(code)
}

func (m *muxWriter) Write(b []byte) (int, error) {
	if m.swallow {
		return len(b), nil
	}
	if !m.wrote {
		m.WriteHeader(http.StatusOK)
	}
	return m.ResponseWriter.Write(b)
}

// Flush lets server-sent events through.
func (m *muxWriter) Flush() {
	if !m.wrote {
		m.WriteHeader(http.StatusOK)
	}
	if f, ok := m.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap lets http.ResponseController reach the underlying writer.
func (m *muxWriter) Unwrap() http.ResponseWriter { return m.ResponseWriter }

// apiError is the body of every error answer.
type apiError struct {
	Error string `json:"error"`
	Code  string `json:"code"`
	ID    string `json:"id,omitempty"`   // duplicate: the existing task
	Task  any    `json:"task,omitempty"` // runsync: the task's status
	Flow  any    `json:"flow,omitempty"` // a flow's runsync: the flow's status
}

func writeError(w http.ResponseWriter, status int, code, msg string) {
	writeJSON(w, status, apiError{Error: msg, Code: code})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func tooLarge(n int64) string {
	return "request body over the limit of " + formatBytes(n)
}

func formatBytes(n int64) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return itoa(n>>20) + " MiB"
	case n >= 1<<10 && n%(1<<10) == 0:
		return itoa(n>>10) + " KiB"
	}
	return itoa(n) + " bytes"
}

func itoa(n int64) string {
	b, _ := json.Marshal(n)
	return string(b)
}

// bodyError answers a body that could not be read or decoded.
func bodyError(w http.ResponseWriter, err error, limit int64) {
	var mb *http.MaxBytesError
	if errors.As(err, &mb) {
		writeError(w, http.StatusRequestEntityTooLarge, "too_large", tooLarge(limit))
		return
	}
	writeError(w, http.StatusBadRequest, "bad_json", "request body: "+jsonProblem(err))
}

// jsonProblem names what is wrong with a JSON body.
func jsonProblem(err error) string {
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		return "invalid JSON at byte " + itoa(se.Offset) + ": " + se.Error()
	case errors.As(err, &te):
		if te.Field != "" {
			return "field " + te.Field + ": a " + te.Value + " where a " + jsonKind(te.Type.Kind().String()) + " belongs"
		}
		return "a " + te.Value + " where a " + jsonKind(te.Type.Kind().String()) + " belongs"
	case errors.Is(err, errEmpty):
		return err.Error()
	}
	msg := strings.TrimPrefix(err.Error(), "json: ")
	if msg == "EOF" || msg == "unexpected EOF" {
		return "truncated or empty JSON"
	}
	return msg
}

func jsonKind(k string) string {
	switch k {
	case "string":
		return "string"
	case "struct", "map":
		return "object"
	case "slice", "array":
		return "array"
	case "bool":
		return "boolean"
	}
	return "number"
}

var errEmpty = errors.New("empty body: send a JSON value")
