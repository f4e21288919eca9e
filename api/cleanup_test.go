package api_test

import (
	"testing"

	"github.com/leatdev/leat/api"
)

// POST drain deletes what waits, POST clean deletes ended tasks of a state
// by age, DELETE obliterates a queue only with force while workers run it;
// bad bodies are refused.
func TestCleanupRoutes(t *testing.T) {
	t.Parallel()
	e := newEnv(t, api.Options{})
	e.do(t, "POST", "/v1/queues/work/runsync", `{"payload":{"do":"x"}}`).want(t, 200, "")
	e.do(t, "POST", "/v1/queues/work/tasks", `{"payload":{"do":"later"},"delay":"1h","id":"later"}`).want(t, 200, "")
	if r := e.do(t, "POST", "/v1/queues/work/drain", "").want(t, 200, ""); r.body["deleted"] != 1.0 {
		t.Fatalf("drain: %s", r.raw)
	}
	e.do(t, "GET", "/v1/queues/work/tasks/later", "").want(t, 404, "")
	e.do(t, "POST", "/v1/queues/work/clean", `{"state":"pending"}`).want(t, 400, "bad_request")
	e.do(t, "POST", "/v1/queues/work/clean", `{"state":"succeeded","older_than":"-1h"}`).want(t, 400, "bad_request")
	e.do(t, "POST", "/v1/queues/work/clean", `{}`).want(t, 400, "bad_request")
	if r := e.do(t, "POST", "/v1/queues/work/clean", `{"state":"succeeded","older_than":"1h"}`).want(t, 200, ""); r.body["deleted"] != 0.0 {
		t.Fatalf("clean 1h: %s", r.raw)
	}
	if r := e.do(t, "POST", "/v1/queues/work/clean", `{"state":"succeeded"}`).want(t, 200, ""); r.body["deleted"] != 1.0 {
		t.Fatalf("clean: %s", r.raw)
	}
	e.do(t, "DELETE", "/v1/queues/work", "").want(t, 409, "queue_running")
	e.do(t, "DELETE", "/v1/queues/work?force=maybe", "").want(t, 400, "bad_request")
	if r := e.do(t, "DELETE", "/v1/queues/work?force=true", "").want(t, 200, ""); r.body["deleted_keys"].(float64) < 1 {
		t.Fatalf("obliterate: %s", r.raw)
	}
	e.do(t, "POST", "/v1/queues/nope/drain", "").want(t, 404, "unknown_queue")
}
