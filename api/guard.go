package api

import (
	"bytes"
	"io"
	"mime"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// A browser on the machine that runs the API is the API's first stranger:
// any page it shows can send requests to 127.0.0.1. The guard refuses
// what such a page can send without the page's origin being the API's:
//
//   - a write from another origin (403 cross_origin), told by the
//     browser's Sec-Fetch-Site header or, from older browsers, by an Origin
//     that does not name the request's host (http.CrossOriginProtection);
//   - a write whose body is not declared JSON (415 bad_content_type): a
//     form or a no-cors fetch can only send text/plain, multipart or
//     urlencoded bodies, while application/json needs the page to be the
//     API's own or to pass a CORS preflight, which the API never grants;
//   - without a token, a Host header that is not a loopback name (403
//     bad_host): a page whose own DNS name is rebound to 127.0.0.1 sends
//     its name, and it is then same-origin with the API for its browser.
type guard struct {
	origins *http.CrossOriginProtection
	hosts   map[string]bool // Options.AllowedHosts, lower case
	// checkHost: refuse Host names beyond loopback and hosts (no token,
	// or AllowedHosts set).
	checkHost bool
}

func newGuard(opts Options) *guard {
	g := &guard{origins: http.NewCrossOriginProtection(), hosts: map[string]bool{}}
	for _, h := range opts.AllowedHosts {
		g.hosts[strings.ToLower(strings.TrimSuffix(h, "."))] = true
	}
	g.checkHost = opts.Token == "" || len(opts.AllowedHosts) > 0
	return g
}

// check answers and returns false when the request is refused.
func (g *guard) check(w http.ResponseWriter, r *http.Request) bool {
	if g.checkHost && !g.hostAllowed(r.Host) {
		writeError(w, http.StatusForbidden, "bad_host", "host "+strconv.Quote(r.Host)+" is not served: without a token the API answers only "+
			"loopback names (localhost, 127.0.0.1, [::1]); name others in Options.AllowedHosts (leat serve --allowed-host)")
		return false
	}
	return true
}

// checkWrite answers and returns false when a write is refused: from
// another origin, or with a body not declared JSON.
func (g *guard) checkWrite(w http.ResponseWriter, r *http.Request) bool {
	if safeMethod(r.Method) {
		return true
	}
	if err := g.origins.Check(r); err != nil {
		writeError(w, http.StatusForbidden, "cross_origin", "cross-origin "+r.Method+" refused: "+err.Error()+
			" (the API takes writes only from its own pages and from clients that are not browsers)")
		return false
	}
	ct := r.Header.Get("Content-Type")
	if ct == "" && r.ContentLength == 0 {
		// No body, no type: curl -X POST .../pause. A form always sends a
		// type, and a fetch from another origin is refused above.
		return true
	}
	if mt, _, err := mime.ParseMediaType(ct); err != nil || mt != "application/json" {
		writeError(w, http.StatusUnsupportedMediaType, "bad_content_type", r.Method+" with content type "+strconv.Quote(ct)+
			": send Content-Type: application/json (a request without a body may send none)")
		return false
	}
	return true
}

func safeMethod(m string) bool {
	return m == http.MethodGet || m == http.MethodHead || m == http.MethodOptions
}

// hostAllowed reports whether a Host header names loopback or an allowed
// host. An empty Host (HTTP/1.0) comes from no browser and is allowed.
func (g *guard) hostAllowed(hostport string) bool {
	if hostport == "" {
		return true
	}
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	host = strings.ToLower(strings.TrimSuffix(strings.TrimSuffix(strings.TrimPrefix(host, "["), "]"), "."))
	if g.hosts[host] {
		return true
	}
	// *.localhost is loopback by RFC 6761, and browsers resolve it so
	// without asking DNS.
	if host == "localhost" || strings.HasSuffix(host, ".localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// holdOpen lifts the server's read and write deadlines for an endpoint
// that answers for longer than a request should take: the stream of
// server-sent events, and runsync, which waits for its task. A server's
// ReadTimeout cancels a request's context when it passes, and its
// WriteTimeout cuts the answer; both stay in force for every other
// endpoint. Servers without deadlines (HTTP/2, a ResponseWriter of a
// program's own) are left as they are.
//
// wait returns how long the endpoint may answer for (0: without end, as
// the events last as long as the task). A request's body is read before
// the read deadline is lifted, so a body trickled in stays bounded by the
// server's ReadTimeout.
func holdOpen(wait func(*http.Request) time.Duration, fn http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if r.ContentLength != 0 {
			body, err := io.ReadAll(r.Body)
			var rest io.Reader = bytes.NewReader(body)
			if err != nil {
				rest = io.MultiReader(rest, errReader{err})
			}
			r.Body = io.NopCloser(rest)
		}
		rc := http.NewResponseController(w)
		_ = rc.SetReadDeadline(time.Time{})
		var until time.Time
		if d := wait(r); d > 0 {
			until = time.Now().Add(d + answerMargin)
		}
		_ = rc.SetWriteDeadline(until)
		fn(w, r)
	}
}

// answerMargin is the time an endpoint held open has to write its answer
// after its wait.
const answerMargin = 30 * time.Second

// errReader returns err.
type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) { return 0, e.err }

// forever is the wait of the server-sent events: as long as the task runs
// and the client listens.
func forever(*http.Request) time.Duration { return 0 }

// runSyncWait is how long runsync may wait: its ?timeout, at most MaxWait
// (an invalid one is answered at once).
func (h *handler) runSyncWait(r *http.Request) time.Duration {
	d := DefaultTimeout
	if s := r.URL.Query().Get("timeout"); s != "" {
		if v, err := time.ParseDuration(s); err == nil && v > 0 && v <= h.opts.MaxWait {
			d = v
		}
	}
	return d
}
