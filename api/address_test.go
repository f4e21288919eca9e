package api_test

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/leatdev/leat/api"
	"github.com/leatdev/leat/internal/tools/redistest"
	"github.com/leatdev/leat/task"
)

// TestEnqueueLevelAddress: a queue's priority levels are addressed as
// queue.level in the path; a bare queue is its level named default; an
// unknown level is refused with the queue's levels, a level that
// contradicts the body's priority too.
func TestEnqueueLevelAddress(t *testing.T) {
	t.Parallel()
	c, prefix := redistest.Client(t)
	prog := newApp(t, c, prefix)
	if _, err := task.Declare[json.RawMessage, json.RawMessage](prog, "inference", task.Priorities("premium", "standard", "default")); err != nil {
		t.Fatal(err)
	}
	if err := prog.Register(context.Background()); err != nil {
		t.Fatal(err)
	}
	e := &env{client: c, prefix: prefix}
	e.srv = httptest.NewServer(api.NewHandler(newApp(t, c, prefix), api.Options{}))
	t.Cleanup(e.srv.Close)
	for path, level := range map[string]string{
		"inference.premium": "premium", "inference.standard": "standard", "inference": "default", "inference.default": "default",
	} {
		r := e.do(t, "POST", "/v1/queues/"+path+"/tasks", `{"payload":{}}`).want(t, 200, "")
		in := e.do(t, "GET", "/v1/tasks/"+r.body["id"].(string), "").want(t, 200, "")
		if in.body["priority"] != level {
			t.Fatalf("%s: stored at %v, want %s", path, in.body["priority"], level)
		}
	}
	r := e.do(t, "POST", "/v1/queues/inference.gold/tasks", `{"payload":{}}`).want(t, 404, "unknown_level")
	if !strings.Contains(r.raw, "premium, standard, default") {
		t.Fatalf("unknown level: %s", r.raw)
	}
	e.do(t, "POST", "/v1/queues/inference.premium/tasks", `{"payload":{},"priority":"standard"}`).want(t, 400, "bad_task")
	e.do(t, "POST", "/v1/queues/inference.premium/tasks", `{"payload":{},"priority":"premium"}`).want(t, 200, "")
	e.do(t, "POST", "/v1/queues/nothing.premium/tasks", `{"payload":{}}`).want(t, 404, "unknown_queue")
	e.do(t, "POST", "/v1/queues/inference.gold/runsync", `{"payload":{}}`).want(t, 404, "unknown_level")
}
