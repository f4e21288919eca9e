package api_test

import (
	"bufio"
	"net/http"
	"testing"
	"time"

	"github.com/leatdev/leat/api"
	"github.com/leatdev/leat/internal/tools/redistest"
	"github.com/leatdev/leat/task"
)

// Durations are answered as Go duration strings, as the API reads them:
// in queue definitions, and in a task's status wherever it is answered.
func TestDurationsAnsweredAsStrings(t *testing.T) {
	t.Parallel()
	e := newEnv(t, api.Options{})

	for _, path := range []string{"/v1/queues/work", "/v1/queues"} {
		r := e.do(t, "GET", path, "").want(t, 200, "")
		q := r.body
		if qs, ok := r.body["queues"].([]any); ok {
			q = qs[0].(map[string]any)
		}
		d := q["definition"].(map[string]any)
		for field, want := range map[string]time.Duration{
			"timeout": task.DefaultTimeout, "retention": task.DefaultRetention, "visibility": task.DefaultVisibility,
			"backoff_min": task.DefaultBackoffMin, "backoff_max": task.DefaultBackoffMax, "dead_age": task.DefaultDeadAge,
		} {
			if d[field] != want.String() {
				t.Errorf("%s: definition %s = %#v, want %q", path, field, d[field], want.String())
			}
		}
		if _, ok := d["rate_window"]; ok {
			t.Errorf("%s: rate_window of a queue without a rate: %s", path, r.raw)
		}
	}

	// A queue whose tasks are unique for a while.
	other := newApp(t, e.client, e.prefix)
	if _, err := task.Declare[int, int](other, "once", task.UniqueFor(90*time.Minute)); err != nil {
		t.Fatal(err)
	}
	if err := other.Register(t.Context()); err != nil {
		t.Fatal(err)
	}
	if d := e.do(t, "GET", "/v1/queues/once", "").want(t, 200, "").body["definition"].(map[string]any); d["unique_ttl"] != "1h30m0s" {
		t.Errorf("unique_ttl %#v, want \"1h30m0s\"", d["unique_ttl"])
	}

	r := e.do(t, "POST", "/v1/queues/work/tasks", `{"payload":{"do":"x"},"timeout":"45s","retention":"2h"}`).want(t, 200, "")
	id := r.body["id"].(string)
	redistest.Eventually(t, 10*time.Second, "task succeeded", func() bool {
		return e.do(t, "GET", "/v1/tasks/"+id, "").body["state"] == "succeeded"
	})
	check := func(where string, in map[string]any) {
		t.Helper()
		if in["timeout"] != "45s" || in["retention"] != "2h0m0s" {
			t.Errorf("%s: timeout %#v, retention %#v; want \"45s\", \"2h0m0s\"", where, in["timeout"], in["retention"])
		}
	}
	check("GET /v1/tasks/{id}", e.do(t, "GET", "/v1/tasks/"+id, "").want(t, 200, "").body)
	list := e.do(t, "GET", "/v1/queues/work/tasks?state=recent", "").want(t, 200, "")
	tasks, _ := list.body["tasks"].([]any)
	if len(tasks) != 1 {
		t.Fatalf("recent: %s", list.raw)
	}
	check("listing", tasks[0].(map[string]any))
	sync := e.do(t, "POST", "/v1/queues/work/runsync", `{"payload":{"do":"y"},"timeout":"1m30s"}`).want(t, 200, "")
	if in := sync.body["task"].(map[string]any); in["timeout"] != "1m30s" {
		t.Errorf("runsync: task timeout %#v", in["timeout"])
	}

	res, err := e.srv.Client().Get(e.srv.URL + "/v1/tasks/" + id + "/events")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		t.Fatalf("events: %d", res.StatusCode)
	}
	s := &sse{res: res, sc: bufio.NewScanner(res.Body)}
	kind, u := s.next(t)
	if kind != task.KindDone || u.Info == nil || u.Info.Timeout != "45s" || u.Info.Retention != "2h0m0s" {
		t.Fatalf("done event: %s %+v", kind, u.Info)
	}
}
