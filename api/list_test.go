package api_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/leatdev/leat/api"
)

func TestListTasks(t *testing.T) {
	t.Parallel()
	e := newEnv(t, api.Options{})
	run := func(do string) string {
		r := e.do(t, "POST", "/v1/queues/work/runsync", `{"payload":{"do":"`+do+`"}}`)
		id, _ := r.body["id"].(string)
		if id == "" {
			id, _ = r.body["task"].(map[string]any)["id"].(string)
		}
		return id
	}
	var dead []string
	for range 3 {
		dead = append(dead, run("die"))
	}
	ok := run("ok")
	failed := run("fail")
	sched := e.do(t, "POST", "/v1/queues/work/tasks", `{"payload":{"do":"later"},"delay":"1h"}`).want(t, 200, "").body["id"].(string)

	ids := func(r reply) []string {
		var s []string
		for _, x := range r.body["tasks"].([]any) {
			s = append(s, x.(map[string]any)["id"].(string))
		}
		return s
	}
	r := e.do(t, "GET", "/v1/queues/work/tasks?state=dead", "").want(t, 200, "")
	if got := ids(r); len(got) != 3 || r.body["limit"] != float64(api.DefaultListLimit) || r.body["state"] != "dead" || r.body["queue"] != "work" {
		t.Fatalf("dead: %s", r.raw)
	}
	task0 := r.body["tasks"].([]any)[0].(map[string]any)
	if task0["state"] != "dead" || task0["error"] != "out of luck" || task0["attempts"] != 1.0 || task0["finished_at"] == nil {
		t.Errorf("dead task: %v", task0)
	}
	for _, id := range dead {
		if !strings.Contains(r.raw, id) {
			t.Errorf("dead task %s not listed: %s", id, r.raw)
		}
	}
	if got := ids(e.do(t, "GET", "/v1/queues/work/tasks?state=dead&limit=2", "").want(t, 200, "")); len(got) != 2 {
		t.Errorf("limit 2: %v", got)
	}
	got := ids(e.do(t, "GET", "/v1/queues/work/tasks?state=recent&limit=100", "").want(t, 200, ""))
	if fmt.Sprint(got) != fmt.Sprint([]string{failed, ok}) && fmt.Sprint(got) != fmt.Sprint([]string{ok, failed}) {
		t.Errorf("recent: %v, want %s and %s", got, ok, failed)
	}
	if got := ids(e.do(t, "GET", "/v1/queues/work/tasks?state=scheduled&limit=1", "").want(t, 200, "")); len(got) != 1 || got[0] != sched {
		t.Errorf("scheduled: %v, want [%s]", got, sched)
	}
	// An empty listing is an empty array.
	e.do(t, "POST", "/v1/queues/work/tasks/"+sched+"/cancel", "").want(t, 200, "")
	if r := e.do(t, "GET", "/v1/queues/work/tasks?state=scheduled", "").want(t, 200, ""); !strings.Contains(r.raw, `"tasks":[]`) {
		t.Errorf("empty listing: %s", r.raw)
	}
	// Bad input.
	for _, c := range []struct{ query, code, says string }{
		{"", "bad_state", "state is missing"},
		{"?state=active", "bad_state", `"active"`},
		{"?state=DEAD", "bad_state", `"DEAD"`},
		{"?state=dead&limit=0", "bad_limit", "from 1 to 100"},
		{"?state=dead&limit=101", "bad_limit", "from 1 to 100"},
		{"?state=dead&limit=-5", "bad_limit", `"-5"`},
		{"?state=dead&limit=ten", "bad_limit", `"ten"`},
		{"?state=dead&limit=", "", ""},
	} {
		r := e.do(t, "GET", "/v1/queues/work/tasks"+c.query, "")
		if c.code == "" {
			r.want(t, 200, "")
			continue
		}
		r.want(t, 400, c.code)
		if !strings.Contains(r.body["error"].(string), c.says) {
			t.Errorf("%s: error %q does not say %q", c.query, r.body["error"], c.says)
		}
	}
	e.do(t, "GET", "/v1/queues/nope/tasks?state=dead", "").want(t, 404, "unknown_queue")
}

// A listing answers the columns a list shows, not the tasks' payloads or
// results: its size does not grow with theirs. The task's own route has
// them.
func TestListTasksLeavesOutPayloads(t *testing.T) {
	t.Parallel()
	e := newEnv(t, api.Options{MaxBody: 2 << 20})
	pad := strings.Repeat("x", 1<<20)
	var ids []string
	for range 10 {
		r := e.do(t, "POST", "/v1/queues/work/tasks", `{"payload":{"do":"later","pad":"`+pad+`"},"delay":"1h"}`).want(t, 200, "")
		ids = append(ids, r.body["id"].(string))
	}
	r := e.do(t, "GET", "/v1/queues/work/tasks?state=scheduled&limit=100", "").want(t, 200, "")
	tasks, _ := r.body["tasks"].([]any)
	if len(tasks) != len(ids) {
		t.Fatalf("%d tasks listed, want %d", len(tasks), len(ids))
	}
	// About 400 bytes a task.
	if len(r.raw) > 1000*len(ids) {
		t.Errorf("a listing of %d tasks is %d bytes", len(ids), len(r.raw))
	}
	for _, x := range tasks {
		tk := x.(map[string]any)
		if _, ok := tk["payload"]; ok {
			t.Errorf("listed task %v carries its payload", tk["id"])
		}
		if tk["state"] != "scheduled" || tk["enqueued_at"] == nil || tk["due_at"] == nil || tk["timeout"] == nil {
			t.Errorf("listed task lacks its status: %v", tk)
		}
	}
	one := e.do(t, "GET", "/v1/tasks/"+ids[0], "").want(t, 200, "")
	if p, _ := one.body["payload"].(map[string]any); p == nil || p["pad"] != pad {
		t.Errorf("GET /v1/tasks/{id}: no payload (%d bytes answered)", len(one.raw))
	}
}
