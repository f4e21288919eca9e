package cmd

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/leatdev/leat/internal/redistest"
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
		done <- Run(ctx, nil, append([]string{"leat"}, s.args("serve", "--addr", "127.0.0.1:0", "--token", "tok", "--read-only")...),
			strings.NewReader(""), &stdout, &stderr)
	}()
	addrRE := regexp.MustCompile(`on (http://\S+) \(read-only\)`)
	redistest.Eventually(t, 10*time.Second, "serve listening", func() bool { return addrRE.MatchString(stderr.String()) })
	base := addrRE.FindStringSubmatch(stderr.String())[1]

	get := func(method, path, token string) (int, map[string]any) {
		req, _ := http.NewRequest(method, base+path, strings.NewReader(`{"payload":{"name":"ada"}}`))
		req.Header.Set("Content-Type", "application/json")
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
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
