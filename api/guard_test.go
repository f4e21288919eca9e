package api_test

import (
	"bufio"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/leatdev/leat/api"
	"github.com/leatdev/leat/app"
	"github.com/leatdev/leat/internal/tools/redistest"
	"github.com/leatdev/leat/task"
	"github.com/redis/go-redis/v9"
)

// notEnqueued checks that no task with the ID exists.
func (e *env) notEnqueued(t *testing.T, id string) {
	t.Helper()
	e.do(t, "GET", "/v1/tasks/"+id, "").want(t, 404, "unknown_task")
}

// notPaused checks that queue work is not paused.
func (e *env) notPaused(t *testing.T) {
	t.Helper()
	if r := e.do(t, "GET", "/v1/queues/work", "").want(t, 200, ""); r.body["paused_at"] != nil {
		t.Fatalf("queue paused: %s", r.raw)
	}
}

// A page of another site cannot write through a browser on the machine:
// what a form or a no-cors fetch can send is refused, and nothing is
// enqueued or paused; clients that are not browsers and the API's own
// pages still write.
func TestCrossOriginWritesRefused(t *testing.T) {
	t.Parallel()
	e := newEnv(t, api.Options{})
	evil := []string{"Origin", "http://evil.example"}

	// The no-cors fetch of a page: a text/plain body, its Origin.
	e.do(t, "POST", "/v1/queues/work/tasks", `{"payload":{},"id":"x1"}`, append(evil, "Content-Type", "text/plain")...).want(t, 403, "cross_origin")
	// The same from a browser that says where the request comes from.
	for _, site := range []string{"cross-site", "same-site"} {
		e.do(t, "POST", "/v1/queues/work/tasks", `{"payload":{},"id":"x1"}`, "Sec-Fetch-Site", site).want(t, 403, "cross_origin")
		e.do(t, "POST", "/v1/queues/work/pause", "", "Sec-Fetch-Site", site).want(t, 403, "cross_origin")
		e.do(t, "DELETE", "/v1/queues/work/dead", "", "Sec-Fetch-Site", site).want(t, 403, "cross_origin")
	}
	// A form's POST, from a browser and as a client without Origin sends it.
	form := []string{"Content-Type", "application/x-www-form-urlencoded"}
	e.do(t, "POST", "/v1/queues/work/pause", "a=b", append(evil, form...)...).want(t, 403, "cross_origin")
	e.do(t, "POST", "/v1/queues/work/pause", "a=b", form...).want(t, 415, "bad_content_type")
	e.do(t, "POST", "/v1/queues/work/tasks", `{"payload":{},"id":"x1"}`, "Content-Type", "text/plain").want(t, 415, "bad_content_type")
	e.do(t, "POST", "/v1/queues/work/tasks", `{"payload":{},"id":"x1"}`, "Content-Type", "multipart/form-data; boundary=x").want(t, 415, "bad_content_type")
	e.do(t, "PUT", "/v1/queues/work/rate", `{"n":1}`, "Content-Type", "text/plain").want(t, 415, "bad_content_type")
	// A form POST with an empty body still carries its content type.
	e.do(t, "POST", "/v1/queues/work/pause", "", form...).want(t, 415, "bad_content_type")
	e.notEnqueued(t, "x1")
	e.notPaused(t)

	// Same origin, and clients that are not browsers: JSON, or no body.
	e.do(t, "POST", "/v1/queues/work/tasks", `{"payload":{"do":"x"},"id":"ok1"}`, "Origin", e.srv.URL).want(t, 200, "")
	e.do(t, "POST", "/v1/queues/work/tasks", `{"payload":{"do":"x"},"id":"ok2"}`, "Sec-Fetch-Site", "same-origin").want(t, 200, "")
	e.do(t, "POST", "/v1/queues/work/tasks", `{"payload":{"do":"x"},"id":"ok3"}`, "Content-Type", "application/json; charset=utf-8").want(t, 200, "")
	e.do(t, "POST", "/v1/queues/work/tasks", `{"payload":{"do":"x"},"id":"ok4"}`).want(t, 200, "")
	if r := e.do(t, "POST", "/v1/queues/work/pause", "", "Sec-Fetch-Site", "same-origin").want(t, 200, ""); r.body["paused_at"] == nil {
		t.Fatalf("pause: %s", r.raw)
	}
	e.do(t, "POST", "/v1/queues/work/resume", "").want(t, 200, "")
	e.notPaused(t)
	for _, id := range []string{"ok1", "ok2", "ok3", "ok4"} {
		e.do(t, "GET", "/v1/tasks/"+id, "").want(t, 200, "")
	}
}

// Without a token the API answers only loopback Host names, so a page
// whose DNS name now points at 127.0.0.1 reads and writes nothing; with a
// token (which a browser does not send by itself) any name is answered,
// unless AllowedHosts narrows them.
func TestHostNames(t *testing.T) {
	t.Parallel()
	e := newEnv(t, api.Options{})
	for _, h := range []string{"attacker.example", "attacker.example:80", "127.0.0.1.attacker.example", "localhost.attacker.example", "10.0.0.1", "[::2]:8080"} {
		e.do(t, "GET", "/v1/queues", "", "Host", h).want(t, 403, "bad_host")
		e.do(t, "POST", "/v1/queues/work/pause", "", "Host", h).want(t, 403, "bad_host")
		e.do(t, "POST", "/v1/queues/work/tasks", `{"payload":{},"id":"r1"}`, "Host", h).want(t, 403, "bad_host")
		req := newGet(t, e.srv.URL+"/")
		req.Host = h
		if res, err := e.srv.Client().Do(req); err != nil || res.StatusCode != 403 {
			t.Fatalf("dashboard at host %s: %v %v", h, res, err)
		} else {
			res.Body.Close()
		}
	}
	e.notEnqueued(t, "r1")
	e.notPaused(t)
	for _, h := range []string{"localhost", "LocalHost:8080", "app.localhost:1", "127.0.0.1", "127.1.2.3:99", "[::1]:8080", "localhost."} {
		e.do(t, "GET", "/v1/queues", "", "Host", h).want(t, 200, "")
	}

	tok := newEnvOn(t, e.client, e.prefix, api.Options{Token: "s3cret"})
	tok.do(t, "GET", "/v1/queues", "", "Host", "leat.example", "Authorization", "Bearer s3cret").want(t, 200, "")

	allowed := newEnvOn(t, e.client, e.prefix, api.Options{AllowedHosts: []string{"Leat.Internal"}})
	allowed.do(t, "GET", "/v1/queues", "", "Host", "leat.internal:8443").want(t, 200, "")
	allowed.do(t, "GET", "/v1/queues", "", "Host", "127.0.0.1").want(t, 200, "")
	allowed.do(t, "GET", "/v1/queues", "", "Host", "attacker.example").want(t, 403, "bad_host")

	both := newEnvOn(t, e.client, e.prefix, api.Options{Token: "s3cret", AllowedHosts: []string{"leat.internal"}})
	both.do(t, "GET", "/v1/queues", "", "Host", "leat.internal", "Authorization", "Bearer s3cret").want(t, 200, "")
	both.do(t, "GET", "/v1/queues", "", "Host", "attacker.example", "Authorization", "Bearer s3cret").want(t, 403, "bad_host")
}

func newGet(t *testing.T, s string) *http.Request {
	t.Helper()
	req, err := http.NewRequest("GET", s, nil)
	if err != nil {
		t.Fatal(err)
	}
	return req
}

// The scheme of the Authorization header is matched in any case (RFC 7235).
func TestBearerSchemeAnyCase(t *testing.T) {
	t.Parallel()
	e := newEnv(t, api.Options{Token: "s3cret"})
	for _, v := range []string{"Bearer s3cret", "bearer s3cret", "BEARER s3cret", "bEaReR  s3cret"} {
		e.do(t, "GET", "/v1/queues", "", "Authorization", v).want(t, 200, "")
	}
	for _, v := range []string{"Bearers3cret", "Basic s3cret", "bearer S3CRET", "bearer", "bearer "} {
		e.do(t, "GET", "/v1/queues", "", "Authorization", v).want(t, 401, "unauthorized")
	}
}

// Every JSON answer, error or not, and the events' stream are marked
// nosniff and no-store.
func TestAnswersNotSniffedNorStored(t *testing.T) {
	t.Parallel()
	e := newEnv(t, api.Options{Token: "s3cret"})
	auth := []string{"Authorization", "Bearer s3cret"}
	id := e.do(t, "POST", "/v1/queues/work/tasks", `{"payload":{"do":"x"}}`, auth...).want(t, 200, "").body["id"].(string)
	for _, r := range []reply{
		e.do(t, "GET", "/v1/queues", "", auth...).want(t, 200, ""),
		e.do(t, "GET", "/v1/info", "", auth...).want(t, 200, ""),
		e.do(t, "GET", "/v1/queues", "").want(t, 401, "unauthorized"),
		e.do(t, "GET", "/v1/nothing", "", auth...).want(t, 404, "no_endpoint"),
		e.do(t, "GET", "/v1/tasks/none", "", auth...).want(t, 404, "unknown_task"),
		e.do(t, "PATCH", "/v1/queues", "", auth...).want(t, 405, "method_not_allowed"),
		e.do(t, "POST", "/v1/queues/work/tasks", "{", auth...).want(t, 400, "bad_json"),
		e.do(t, "POST", "/v1/queues/work/tasks", "x", append(auth, "Content-Type", "text/plain")...).want(t, 415, "bad_content_type"),
	} {
		if r.header.Get("X-Content-Type-Options") != "nosniff" || r.header.Get("Cache-Control") != "no-store" {
			t.Errorf("answer %d %s: X-Content-Type-Options %q, Cache-Control %q", r.status, r.raw, r.header.Get("X-Content-Type-Options"), r.header.Get("Cache-Control"))
		}
	}
	req, _ := http.NewRequest("GET", e.srv.URL+"/v1/tasks/"+id+"/events", nil)
	req.Header.Set(auth[0], auth[1])
	res, err := e.srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != 200 || res.Header.Get("Cache-Control") != "no-store" || res.Header.Get("X-Content-Type-Options") != "nosniff" {
		t.Fatalf("events: %d, Cache-Control %q, X-Content-Type-Options %q", res.StatusCode, res.Header.Get("Cache-Control"), res.Header.Get("X-Content-Type-Options"))
	}
}

// A 500 answer says that something failed, not where Redis is nor what it
// said; the app's log has the detail.
func TestInternalErrorHidesRedis(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now
	c := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, DialTimeout: 2 * time.Second})
	t.Cleanup(func() { c.Close() })
	var log redistest.Log
	a, err := app.New(app.Config{Name: "shop", Client: c, KeyPrefix: redistest.Prefix(t), Logger: slog.New(slog.NewTextHandler(&log, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	e := &env{srv: httptest.NewServer(api.NewHandler(a, api.Options{}))}
	t.Cleanup(e.srv.Close)
	_, port, _ := net.SplitHostPort(addr)
	for _, p := range []string{"/v1/queues", "/v1/overview", "/v1/tasks/x"} {
		r := e.do(t, "GET", p, "").want(t, 500, "internal")
		if strings.Contains(r.raw, port) || strings.Contains(r.raw, "refused") || strings.Contains(r.raw, "dial") {
			t.Errorf("GET %s tells Redis's address or error: %s", p, r.raw)
		}
	}
	if s := log.String(); !strings.Contains(s, addr) || !strings.Contains(s, "route=\"GET /v1/queues\"") {
		t.Errorf("the log lacks the error's detail or endpoint: %s", s)
	}
}

// slowServer serves e's handler with short read and write timeouts.
func slowServer(t *testing.T, e *env, timeout time.Duration) *env {
	t.Helper()
	srv := httptest.NewUnstartedServer(e.srv.Config.Handler)
	srv.Config.ReadTimeout = timeout
	srv.Config.WriteTimeout = timeout
	srv.Start()
	t.Cleanup(srv.Close)
	return &env{srv: srv, client: e.client, prefix: e.prefix, gate: e.gate}
}

// The events' stream and runsync answer past the server's read and write
// timeouts, which still apply to every other endpoint.
func TestLongAnswersOutliveTimeouts(t *testing.T) {
	t.Parallel()
	const timeout = 300 * time.Millisecond
	e := newEnv(t, api.Options{})
	s := slowServer(t, e, timeout)

	// A stream of events open past both timeouts.
	id := s.do(t, "POST", "/v1/queues/work/tasks", `{"payload":{"do":"parts"}}`).want(t, 200, "").body["id"].(string)
	res, err := s.srv.Client().Get(s.srv.URL + "/v1/tasks/" + id + "/events")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	ev := &sse{res: res, sc: bufio.NewScanner(res.Body)}
	for n := 0; n < 2; {
		if kind, _ := ev.next(t); kind == task.KindPartial {
			n++
		}
	}
	// Past the timeouts, a runsync of another task waiting for the same
	// gate, and then the events that follow the gate.
	runsync := make(chan reply, 1)
	go func() {
		req, _ := http.NewRequest("POST", s.srv.URL+"/v1/queues/work/runsync?timeout=1m", strings.NewReader(`{"payload":{"do":"parts"}}`))
		req.Header.Set("Content-Type", "application/json")
		res, err := s.srv.Client().Do(req)
		if err != nil {
			runsync <- reply{raw: err.Error()}
			return
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		runsync <- reply{status: res.StatusCode, raw: string(b)}
	}()
	redistest.Eventually(t, 10*time.Second, "both tasks active", func() bool {
		r := s.do(t, "GET", "/v1/queues/work", "").want(t, 200, "")
		counts, _ := r.body["counts"].(map[string]any)
		return counts["active"] == float64(2)
	})
	// The timeouts pass: a request cut by the read timeout starts now,
	// twice.
	for range 2 {
		cutByReadTimeout(t, s.srv.Listener.Addr().String())
	}
	close(e.gate)
	for {
		kind, u := ev.next(t)
		if kind == task.KindDone {
			if u.Info == nil || u.Info.State != task.Succeeded {
				t.Fatalf("done: %+v", u.Info)
			}
			break
		}
	}
	if r := <-runsync; r.status != 200 || !strings.Contains(r.raw, `"result":"all parts"`) {
		t.Fatalf("runsync past the timeouts: %d %s", r.status, r.raw)
	}
}

// cutByReadTimeout sends the start of a request to addr and returns when
// the server, waiting for the rest, closes the connection.
func cutByReadTimeout(t *testing.T, addr string) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := io.WriteString(c, "GET /v1/info HTTP/1.1\r\nHost: localhost\r\n"); err != nil {
		t.Fatal(err)
	}
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.Copy(io.Discard, c); err != nil {
		t.Fatalf("the server did not cut a request that stopped half-way: %v", err)
	}
}

// A live setting that Redis refuses to store is the server's failure, not
// the client's: 500 without what Redis said (which names its user and the
// key), not 400 bad_rate, bad_concurrency or bad_events with it. Values out of range
// are still the client's (400).
func TestLiveSettingRefusedByRedisIsInternal(t *testing.T) {
	t.Parallel()
	e := newEnv(t, api.Options{})
	// A user that may read the app's keys and write none of them.
	opt, err := redis.ParseURL(redistest.User(t, "+@all", "%R~"+e.prefix+"*"))
	if err != nil {
		t.Fatal(err)
	}
	c := redis.NewClient(opt)
	t.Cleanup(func() { c.Close() })
	var log redistest.Log
	a, err := app.New(app.Config{Name: "shop", Client: c, KeyPrefix: e.prefix, Logger: slog.New(slog.NewTextHandler(&log, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	ro := &env{srv: httptest.NewServer(api.NewHandler(a, api.Options{}))}
	t.Cleanup(ro.srv.Close)
	for _, req := range [][2]string{{"/v1/queues/work/concurrency", `{"n":7}`}, {"/v1/queues/work/rate", `{"n":5,"window":"1s"}`},
		{"/v1/queues/work/events", `{"enabled":true,"max_len":500}`}} {
		r := ro.do(t, "PUT", req[0], req[1]).want(t, 500, "internal")
		if strings.Contains(r.raw, "NOPERM") || strings.Contains(r.raw, opt.Username) || strings.Contains(r.raw, e.prefix) {
			t.Errorf("PUT %s tells what Redis said: %s", req[0], r.raw)
		}
	}
	if s := log.String(); !strings.Contains(s, "NOPERM") {
		t.Errorf("the log lacks Redis's refusal: %s", s)
	}
	ro.do(t, "PUT", "/v1/queues/work/concurrency", `{"n":0}`).want(t, 400, "bad_concurrency")
	ro.do(t, "PUT", "/v1/queues/work/rate", `{"n":-1,"window":"1s"}`).want(t, 400, "bad_rate")
	ro.do(t, "PUT", "/v1/queues/work/events", `{"enabled":true,"max_len":-1}`).want(t, 400, "bad_events")
}
