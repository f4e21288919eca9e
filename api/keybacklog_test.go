package api_test

import (
	"context"
	"testing"

	"github.com/leatdev/leat/api"
	"github.com/leatdev/leat/task"
)

// An enqueue past a keyed queue's MaxKeyBacklog answers 429
// key_backlog_full, and the key's line holds what it held.
func TestEnqueueKeyBacklogFull(t *testing.T) {
	t.Parallel()
	e := newEnv(t, api.Options{})
	other := newApp(t, e.client, e.prefix)
	if _, err := task.Declare[job, string](other, "lines", task.Keyed(), task.MaxKeyBacklog(1)); err != nil {
		t.Fatal(err)
	}
	if err := other.Register(context.Background()); err != nil {
		t.Fatal(err)
	}
	e.do(t, "POST", "/v1/queues/lines/tasks", `{"payload":{"do":"a"},"key":"acct"}`).want(t, 200, "")
	e.do(t, "POST", "/v1/queues/lines/tasks", `{"payload":{"do":"b"},"key":"acct"}`).want(t, 429, "key_backlog_full")
	e.do(t, "POST", "/v1/queues/lines/tasks", `{"payload":{"do":"c"},"key":"other"}`).want(t, 200, "")
	r := e.do(t, "GET", "/v1/queues/lines", "").want(t, 200, "")
	if counts, _ := r.body["counts"].(map[string]any); counts["pending"] != 2.0 {
		t.Fatalf("queue after the refusal: %s", r.raw)
	}
}
