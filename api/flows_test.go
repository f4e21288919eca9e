package api_test

import (
	"strings"
	"testing"

	"github.com/leatdev/leat/api"
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
