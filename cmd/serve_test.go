package cmd

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/leatdev/leat/internal/tools/redistest"
)

func TestServeRefusesOpenAddressWithoutToken(t *testing.T) {
	t.Parallel()
	s := newShop(t)
	for _, addr := range []string{"0.0.0.0:0", ":0", "192.0.2.1:8080", "[::]:0"} {
		r := run(t, nil, "", s.args("serve", "--addr", addr)...)
		if r.status != 2 || !strings.Contains(r.stderr, "LEAT_SERVE_TOKEN") {
			t.Errorf("%s: %+v", addr, r)
		}
	}
	r := run(t, nil, "", s.args("serve", "--addr", "nowhere")...)
	if r.status != 2 || !strings.Contains(r.stderr, "--addr") {
		t.Errorf("bad address: %+v", r)
	}
	r = run(t, nil, "", s.args("serve", "--max-body", "0")...)
	if r.status != 2 || !strings.Contains(r.stderr, "--max-body") {
		t.Errorf("bad max body: %+v", r)
	}
	r = run(t, nil, "", s.args("serve", "--max-followers", "0")...)
	if r.status != 2 || !strings.Contains(r.stderr, "--max-followers") {
		t.Errorf("bad max followers: %+v", r)
	}
	r = run(t, nil, "", s.args("serve", "--max-conns", "0")...)
	if r.status != 2 || !strings.Contains(r.stderr, "--max-conns") {
		t.Errorf("bad max conns: %+v", r)
	}
	for _, h := range []string{"http://leat.example", "leat.example:8080", ""} {
		r = run(t, nil, "", s.args("serve", "--allowed-host", h)...)
		if r.status != 2 || !strings.Contains(r.stderr, "--allowed-host") {
			t.Errorf("bad allowed host %q: %+v", h, r)
		}
	}
	for addr, ok := range map[string]bool{"127.0.0.1:1": true, "localhost:1": true, "[::1]:1": true, "0.0.0.0:1": false, ":1": false} {
		if err := checkListen(addr, ""); (err == nil) != ok {
			t.Errorf("checkListen(%q): %v", addr, err)
		}
		if err := checkListen(addr, "tok"); err != nil {
			t.Errorf("checkListen(%q) with a token: %v", addr, err)
		}
	}
}

func TestServe(t *testing.T) {
	t.Parallel()
	s := newShop(t)
	runTaskWorker(t, s)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var stdout, stderr redistest.Log
	done := make(chan int, 1)
	go func() {
		done <- Run(ctx, nil, append([]string{"leat"}, s.args("serve", "--addr", "127.0.0.1:0", "--token", "tok", "--read-only", "--allowed-host", "leat.test",
			"--max-followers", "1")...),
			strings.NewReader(""), &stdout, &stderr)
	}()
	addrRE := regexp.MustCompile(`on (http://\S+) \(read-only\)`)
	redistest.Eventually(t, 10*time.Second, "serve listening", func() bool { return addrRE.MatchString(stderr.String()) })
	base := addrRE.FindStringSubmatch(stderr.String())[1]

	host := ""
	get := func(method, path, token string) (int, map[string]any) {
		req, _ := http.NewRequest(method, base+path, strings.NewReader(`{"payload":{"name":"ada"}}`))
		req.Header.Set("Content-Type", "application/json")
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		if host != "" {
			req.Host = host
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		var m map[string]any
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatalf("%s %s: %s", method, path, b)
		}
		return res.StatusCode, m
	}
	if st, m := get("GET", "/v1/queues", "tok"); st != 200 || !strings.Contains(func() string { b, _ := json.Marshal(m); return string(b) }(), `"greet"`) {
		t.Fatalf("queues: %d %v", st, m)
	}
	if st, m := get("GET", "/v1/info", "tok"); st != 200 || m["read_only"] != true || m["version"] != version() || m["version"] == "" {
		t.Fatalf("info: %d %v", st, m)
	}
	if !strings.Contains(stderr.String(), "dashboard at "+base+"/") {
		t.Errorf("serve does not say where the dashboard is: %s", stderr.String())
	}
	if st, m := get("GET", "/v1/queues", ""); st != 401 || m["code"] != "unauthorized" {
		t.Fatalf("no token: %d %v", st, m)
	}
	if st, m := get("POST", "/v1/queues/greet/tasks", "tok"); st != 403 || m["code"] != "read_only" {
		t.Fatalf("read-only: %d %v", st, m)
	}
	// With a token and --allowed-host, only loopback names and that one.
	host = "leat.test:8080"
	if st, m := get("GET", "/v1/info", "tok"); st != 200 {
		t.Fatalf("allowed host: %d %v", st, m)
	}
	host = "attacker.example"
	if st, m := get("GET", "/v1/info", "tok"); st != 403 || m["code"] != "bad_host" {
		t.Fatalf("other host: %d %v", st, m)
	}
	host = ""
	// --max-followers 1: a second follower of a task waiting an hour is
	// answered 503 while the first one listens.
	r := run(t, nil, "", s.args("enqueue", "--delay", "1h", "greet", `{"name":"later"}`)...)
	if r.status != 0 {
		t.Fatalf("enqueue: %+v", r)
	}
	follow := func() *http.Response {
		req, _ := http.NewRequest("GET", base+"/v1/tasks/"+strings.TrimSpace(r.stdout)+"/events", nil)
		req.Header.Set("Authorization", "Bearer tok")
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	first := follow()
	if first.StatusCode != 200 {
		t.Fatalf("first follower: %d", first.StatusCode)
	}
	second := follow()
	if second.StatusCode != 503 {
		second.Body.Close()
		t.Fatalf("second follower beyond --max-followers 1: %d", second.StatusCode)
	}
	b, _ := io.ReadAll(second.Body)
	second.Body.Close()
	if !strings.Contains(string(b), "too_many_followers") {
		t.Fatalf("second follower beyond --max-followers 1: %d %s", second.StatusCode, b)
	}
	first.Body.Close()
	cancel()
	select {
	case st := <-done:
		if st != 0 {
			t.Fatalf("serve ended with status %d: %s", st, stderr.String())
		}
	case <-time.After(15 * time.Second):
		t.Fatal("serve did not stop")
	}
}

// serveLimited serves h on a loopback port with limits l until the test
// ends, and returns its address.
func serveLimited(t *testing.T, h http.Handler, l serverLimits) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv, lln := newServer(context.Background(), h, ln, l)
	done := make(chan error, 1)
	go func() { done <- srv.Serve(lln) }()
	t.Cleanup(func() {
		srv.Close()
		<-done
	})
	return ln.Addr().String()
}

// ok reads the request's body and answers "ok".
var ok = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
	_, _ = io.Copy(io.Discard, r.Body)
	_, _ = io.WriteString(w, "ok")
})

// dial opens a connection to addr, closed when the test ends.
func dial(t *testing.T, addr string) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// closedByServer reads c until the server closes it, failing the test
// when it is still open after 10 seconds.
func closedByServer(t *testing.T, c net.Conn, what string) {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	_, err := io.Copy(io.Discard, c)
	if errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("%s: the connection is still open", what)
	}
}

// A body trickled in is cut at the read timeout.
func TestServeCutsTrickledBody(t *testing.T) {
	t.Parallel()
	l := defaultLimits
	l.read = 300 * time.Millisecond
	c := dial(t, serveLimited(t, ok, l))
	if _, err := io.WriteString(c, "POST / HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	trickled := make(chan struct{})
	go func() { // a byte every 20 ms, until the server stops reading
		defer close(trickled)
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
				if _, err := c.Write([]byte("x")); err != nil {
					return
				}
			}
		}
	}()
	closedByServer(t, c, "a trickled body")
	close(stop)
	<-trickled
}

// An answer still being written at the write timeout is cut: a client
// that reads it, however slowly, does not hold the connection forever.
func TestServeCutsLongAnswer(t *testing.T) {
	t.Parallel()
	l := defaultLimits
	l.write = 300 * time.Millisecond
	endless := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		chunk := []byte(strings.Repeat("x", 1024) + "\n")
		rc := http.NewResponseController(w)
		for r.Context().Err() == nil {
			if _, err := w.Write(chunk); err != nil {
				return
			}
			if rc.Flush() != nil {
				return
			}
		}
	})
	c := dial(t, serveLimited(t, endless, l))
	if _, err := io.WriteString(c, "GET / HTTP/1.1\r\nHost: localhost\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	closedByServer(t, c, "an answer written past the write timeout")
}

// An idle keep-alive connection is closed at the idle timeout.
func TestServeClosesIdleConnection(t *testing.T) {
	t.Parallel()
	l := defaultLimits
	l.idle = 300 * time.Millisecond
	c := dial(t, serveLimited(t, ok, l))
	br := bufio.NewReader(c)
	if _, err := io.WriteString(c, "GET / HTTP/1.1\r\nHost: localhost\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	res, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(res.Body)
	if res.StatusCode != 200 || string(b) != "ok" || res.Close {
		t.Fatalf("answer: %d %q, close %v", res.StatusCode, b, res.Close)
	}
	closedByServer(t, c, "an idle keep-alive connection")
}

// Beyond --max-conns, a connection waits until another one closes.
func TestServeCapsConnections(t *testing.T) {
	t.Parallel()
	l := defaultLimits
	l.maxConns = 1
	addr := serveLimited(t, ok, l)
	get := func(c net.Conn, br *bufio.Reader, within time.Duration) error {
		if _, err := io.WriteString(c, "GET / HTTP/1.1\r\nHost: localhost\r\n\r\n"); err != nil {
			return err
		}
		_ = c.SetReadDeadline(time.Now().Add(within))
		res, err := http.ReadResponse(br, nil)
		if err != nil {
			return err
		}
		defer res.Body.Close()
		if res.StatusCode != 200 {
			t.Fatalf("answer %d", res.StatusCode)
		}
		return nil
	}
	a := dial(t, addr)
	if err := get(a, bufio.NewReader(a), 10*time.Second); err != nil {
		t.Fatal(err)
	}
	// a stays open (keep-alive): b is not served meanwhile.
	b := dial(t, addr)
	bb := bufio.NewReader(b)
	if err := get(b, bb, 500*time.Millisecond); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("a connection beyond the cap was served: %v", err)
	}
	a.Close()
	_ = b.SetReadDeadline(time.Now().Add(10 * time.Second))
	res, err := http.ReadResponse(bb, nil)
	if err != nil {
		t.Fatalf("the waiting connection was not served after the other closed: %v", err)
	}
	res.Body.Close()
}
