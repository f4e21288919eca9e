package cmd

import (
	"io"
	"net"
	"net/http"
	"regexp"
	"strconv"
	"testing"
)

// freeAddr returns a local TCP address nothing listens on.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// httpGet returns the status and body of url; status 0 when it cannot connect.
func httpGet(t *testing.T, url string) (int, string) {
	t.Helper()
	tr := &http.Transport{DisableKeepAlives: true}
	defer tr.CloseIdleConnections()
	resp, err := (&http.Client{Transport: tr}).Get(url)
	if err != nil {
		return 0, ""
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

var processedRE = regexp.MustCompile(`(?m)^leat_events_processed_total\{[^}]*processor="count"[^}]*\} (\S+)$`)

func TestWorkerMetrics(t *testing.T) {
	t.Parallel()
	s := newShop(t)
	ta := &ticksApp{}
	addr := freeAddr(t)
	b := start(t, ta.setup, s.quiet("worker", "--metrics-addr", addr)...)
	base := "http://" + addr
	waitUntil(t, b, "/readyz ready", func() bool {
		code, _ := httpGet(t, base+"/readyz")
		return code == http.StatusOK
	})
	if code, body := httpGet(t, base+"/healthz"); code != http.StatusOK || body != "ok\n" {
		t.Errorf("/healthz: %d %q", code, body)
	}
	if r := run(t, nil, ticks(20), s.args("sendmany", "ticks", "-")...); r.status != 0 {
		t.Fatalf("sendmany: %+v", r)
	}
	waitUntil(t, b, "20 events in /metrics", func() bool {
		_, body := httpGet(t, base+"/metrics")
		var sum float64
		for _, m := range processedRE.FindAllStringSubmatch(body, -1) {
			v, _ := strconv.ParseFloat(m[1], 64)
			sum += v
		}
		return sum == 20
	})
	_, body := httpGet(t, base+"/metrics")
	for _, want := range []string{`leat_handler_duration_seconds_count{processor="count",stream="ticks"}`, `leat_pending{partition="0",processor="count",stream="ticks"} `,
		`leat_lag{partition="3",processor="count",stream="ticks"} `} {
		if !regexp.MustCompile(regexp.QuoteMeta(want)).MatchString(body) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	// The only worker of the app is ready and, once elected, the leader.
	leaderRE, readyRE := regexp.MustCompile(`(?m)^leat_leader\{app="[^"]+"\} 1$`), regexp.MustCompile(`(?m)^leat_ready\{app="[^"]+"\} 1$`)
	waitUntil(t, b, "leat_leader and leat_ready 1 in /metrics", func() bool {
		_, body := httpGet(t, base+"/metrics")
		return leaderRE.MatchString(body) && readyRE.MatchString(body)
	})
	if r := b.stop(t); r.status != 0 {
		t.Fatalf("worker: %+v", r)
	}
	if code, _ := httpGet(t, base+"/healthz"); code != 0 {
		t.Errorf("metrics server still serving after the worker stopped: %d", code)
	}
}

func TestWorkerMetricsErrors(t *testing.T) {
	t.Parallel()
	s := newShop(t)
	ta := &ticksApp{}
	wantFailure(t, run(t, ta.setup, "", s.quiet("worker", "--metrics-addr", "9090")...), exitUsage, "--metrics-addr \"9090\": want host:port")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	wantFailure(t, run(t, ta.setup, "", s.quiet("worker", "--metrics-addr", ln.Addr().String())...), exitFailure, "--metrics-addr: listen tcp", "address already in use")
}
