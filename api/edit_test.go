package api_test

import (
	"testing"

	"github.com/leatdev/leat/api"
)

// PATCH changes a task that waits to run and answers it; what cannot be
// changed is refused.
func TestEditTaskRoute(t *testing.T) {
	t.Parallel()
	e := newEnv(t, api.Options{})
	e.do(t, "POST", "/v1/queues/work/tasks", `{"payload":{"do":"later"},"delay":"1h","id":"later"}`).want(t, 200, "")
	e.do(t, "PATCH", "/v1/tasks/later", `{}`).want(t, 400, "bad_request")
	e.do(t, "PATCH", "/v1/tasks/later", `{"run_now":true,"delay":"1m"}`).want(t, 400, "bad_request")
	e.do(t, "PATCH", "/v1/tasks/later", `{"delay":"-1m"}`).want(t, 400, "bad_request")
	e.do(t, "PATCH", "/v1/tasks/later", `{"priority":"urgent"}`).want(t, 400, "bad_task")
	e.do(t, "PATCH", "/v1/tasks/nope", `{"run_now":true}`).want(t, 404, "unknown_task")
	r := e.do(t, "PATCH", "/v1/queues/work/tasks/later", `{"payload":{"do":"edited"},"priority":"low","delay":"2h"}`).want(t, 200, "")
	if r.body["state"] != "scheduled" || r.body["priority"] != "low" {
		t.Fatalf("after the edit: %s", r.raw)
	}
	if r := e.do(t, "PATCH", "/v1/tasks/later", `{"run_now":true}`).want(t, 200, ""); r.body["state"] != "pending" && r.body["state"] != "active" && r.body["state"] != "succeeded" {
		t.Fatalf("after run_now: %s", r.raw)
	}
	done := e.do(t, "POST", "/v1/queues/work/runsync", `{"payload":{"do":"x"}}`).want(t, 200, "").body["id"].(string)
	e.do(t, "PATCH", "/v1/tasks/"+done, `{"run_now":true}`).want(t, 409, "wrong_state")
}
