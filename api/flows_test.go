package api_test

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/leatdev/leat/api"
	"github.com/leatdev/leat/internal/tools/redistest"
)

// POST /v1/flows submits a flow given as data; GET waits for it and answers
// each node and the sinks' results; list and cancel; a bad flow is refused
// whole with every mistake, nothing written.
func TestFlowRoutes(t *testing.T) {
	t.Parallel()
	e := newEnv(t, api.Options{})
	bad := e.do(t, "POST", "/v1/flows", `{"nodes":{"a":{"queue":"nope"},"b":{"queue":"work","parents":["zz"]}}}`).want(t, 400, "bad_flow")
	if msg, _ := bad.body["error"].(string); !strings.Contains(msg, `node "a"`) || !strings.Contains(msg, `unknown parent "zz"`) {
		t.Fatalf("bad flow: %s", bad.raw)
	}
	e.do(t, "POST", "/v1/flows", `{"nodes":{"a":{"queue":"work","parents":["b"]},"b":{"queue":"work","parents":["a"]}}}`).want(t, 400, "bad_flow")
	if r := e.do(t, "GET", "/v1/flows", "").want(t, 200, ""); len(r.body["flows"].([]any)) != 0 {
		t.Fatalf("flows after refused ones: %s", r.raw)
	}
	r := e.do(t, "POST", "/v1/flows", `{"nodes":{
		"a":{"queue":"work","payload":{"do":"a"}},
		"b":{"queue":"work","payload":{"do":"b"},"parents":["a"]},
		"c":{"queue":"work","payload":{"do":"c"},"parents":["a"],"options":{"priority":"low"}},
		"d":{"queue":"work","payload":{"do":"d"},"parents":["b","c"]}}}`).want(t, 200, "")
	id, _ := r.body["id"].(string)
	if id == "" {
		t.Fatalf("submit: %s", r.raw)
	}
	done := e.do(t, "GET", "/v1/flows/"+id+"?wait=30s", "").want(t, 200, "")
	if done.body["state"] != "succeeded" || done.body["results"].(map[string]any)["d"] != "did d" || len(done.body["nodes"].([]any)) != 4 {
		t.Fatalf("the flow: %s", done.raw)
	}
	e.do(t, "GET", "/v1/flows/"+id+"?wait=forever", "").want(t, 400, "bad_timeout")
	e.do(t, "GET", "/v1/flows/nope", "").want(t, 404, "unknown_flow")
	e.do(t, "POST", "/v1/flows/"+id+"/cancel", "").want(t, 409, "wrong_state")

	blocked := e.do(t, "POST", "/v1/flows", `{"nodes":{"x":{"queue":"work","payload":{"do":"block"}},"y":{"queue":"work","parents":["x"]}}}`).want(t, 200, "").body["id"].(string)
	if c := e.do(t, "POST", "/v1/flows/"+blocked+"/cancel", "").want(t, 200, ""); c.body["state"] != "cancelled" {
		t.Fatalf("cancel: %s", c.raw)
	}
	list := e.do(t, "GET", "/v1/flows?state=succeeded", "").want(t, 200, "")
	if fl := list.body["flows"].([]any); len(fl) != 1 || fl[0].(map[string]any)["id"] != id {
		t.Fatalf("succeeded flows: %s", list.raw)
	}
	e.do(t, "GET", "/v1/flows?state=odd", "").want(t, 400, "bad_request")
	e.do(t, "GET", "/v1/flows?limit=0", "").want(t, 400, "bad_limit")
}

// POST /v1/flows/runsync submits a flow and answers once it has ended,
// past the server's read and write timeouts: the sinks' results and the
// flow (200), a failed flow (422 flow_failed, with the node that failed
// it), one still running at ?timeout (504, with the flow as it is, going
// on); its timeout is bounded by MaxWait; bad flows and IDs taken are
// refused, as by POST /v1/flows.
func TestFlowRunSync(t *testing.T) {
	t.Parallel()
	e := newEnv(t, api.Options{MaxWait: 20 * time.Second})
	s := slowServer(t, e, 300*time.Millisecond)

	held := make(chan reply, 1)
	go func() {
		req, _ := http.NewRequest("POST", s.srv.URL+"/v1/flows/runsync?timeout=15s", strings.NewReader(`{"id":"held","nodes":{
			"x":{"queue":"work","payload":{"do":"parts"}},
			"y":{"queue":"work","payload":{"do":"y"},"parents":["x"]},
			"z":{"queue":"work","payload":{"do":"z"},"parents":["x"]}}}`))
		req.Header.Set("Content-Type", "application/json")
		res, err := s.srv.Client().Do(req)
		if err != nil {
			held <- reply{raw: err.Error()}
			return
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		r := reply{status: res.StatusCode, raw: string(b)}
		_ = json.Unmarshal(b, &r.body)
		held <- r
	}()
	redistest.Eventually(t, 10*time.Second, "x active", func() bool {
		r := e.do(t, "GET", "/v1/flows/held", "")
		nodes, _ := r.body["nodes"].([]any)
		return r.status == 200 && len(nodes) == 3 && nodes[0].(map[string]any)["state"] == "active"
	})
	for range 2 {
		cutByReadTimeout(t, s.srv.Listener.Addr().String())
	}
	close(e.gate)
	r := <-held
	if r.status != 200 || r.body["state"] != "succeeded" || r.body["id"] != "held" {
		t.Fatalf("runsync past the server's timeouts: %d %s", r.status, r.raw)
	}
	if res := r.body["results"].(map[string]any); len(res) != 2 || res["y"] != "did y" || res["z"] != "did z" {
		t.Fatalf("the sinks' results: %s", r.raw)
	}
	if fl := r.body["flow"].(map[string]any); fl["state"] != "succeeded" || len(fl["nodes"].([]any)) != 3 {
		t.Fatalf("the flow: %s", r.raw)
	}

	f := e.do(t, "POST", "/v1/flows/runsync", `{"nodes":{"a":{"queue":"work","payload":{"do":"fail"}},"b":{"queue":"work","parents":["a"]}}}`).want(t, 422, "flow_failed")
	if fl, _ := f.body["flow"].(map[string]any); fl == nil || fl["failed_by"] != "a" || f.body["id"] == "" || !strings.Contains(f.body["error"].(string), "(node a)") {
		t.Fatalf("a failed flow: %s", f.raw)
	}

	start := time.Now()
	slow := e.do(t, "POST", "/v1/flows/runsync?timeout=300ms", `{"nodes":{"a":{"queue":"work","payload":{"do":"block"}}}}`).want(t, 504, "timeout")
	if el := time.Since(start); el > 5*time.Second {
		t.Fatalf("the timeout of 300ms answered after %s", el)
	}
	id, _ := slow.body["id"].(string)
	if fl, _ := slow.body["flow"].(map[string]any); id == "" || fl == nil || fl["state"] != "running" {
		t.Fatalf("a flow running at the timeout: %s", slow.raw)
	}
	if g := e.do(t, "GET", "/v1/flows/"+id, "").want(t, 200, ""); g.body["state"] != "running" {
		t.Fatalf("the flow went on: %s", g.raw)
	}
	e.do(t, "POST", "/v1/flows/"+id+"/cancel", "").want(t, 200, "")

	for _, to := range []string{"soon", "-1s", "21s"} {
		e.do(t, "POST", "/v1/flows/runsync?timeout="+to, `{"nodes":{"a":{"queue":"work"}}}`).want(t, 400, "bad_timeout")
	}
	e.do(t, "POST", "/v1/flows/runsync", `{"nodes":{"a":{"queue":"nope"}}}`).want(t, 400, "bad_flow")
	if d := e.do(t, "POST", "/v1/flows/runsync", `{"id":"held","nodes":{"a":{"queue":"work"}}}`).want(t, 409, "duplicate"); d.body["id"] != "held" {
		t.Fatalf("an ID taken: %s", d.raw)
	}
	e.do(t, "POST", "/v1/flows", `{"id":"held","nodes":{"a":{"queue":"work"}}}`).want(t, 409, "duplicate")
}
