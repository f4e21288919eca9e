package api_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/leatdev/leat/api"
	"github.com/leatdev/leat/internal/rdb"
	"github.com/leatdev/leat/internal/tools/redistest"
	"github.com/leatdev/leat/task"
)

// sseEvent is one parsed server-sent event.
type sseEvent struct {
	id, kind string
	ev       task.QueueEvent
}

// parseSSE parses the events a follower got (follow), skipping comments.
func parseSSE(t *testing.T, raw []string) []sseEvent {
	t.Helper()
	var out []sseEvent
	for _, text := range raw {
		var e sseEvent
		for _, line := range strings.Split(text, "\n") {
			switch k, v, _ := strings.Cut(line, ": "); k {
			case "id":
				e.id = v
			case "event":
				e.kind = v
			case "data":
				if err := json.Unmarshal([]byte(v), &e.ev); err != nil {
					t.Fatalf("event data %q: %v", v, err)
				}
			}
		}
		if e.kind != "" {
			out = append(out, e)
		}
	}
	return out
}

// GET /v1/queues/{queue}/events streams every state change of the queue's
// tasks: new ones by default, the whole history from since=0, the events
// after an ID from since=ID or the Last-Event-ID header; a bad position
// and an unknown queue are refused before the stream starts.
func TestQueueEventsSSE(t *testing.T) {
	t.Parallel()
	e := newEnv(t, api.Options{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ks := rdb.NewKeySpace(e.prefix, "shop")
	if err := rdb.SetEvents(ctx, e.client, ks.TaskConfig("work"), 1000); err != nil {
		t.Fatal(err)
	}
	e.do(t, "GET", "/v1/queues/work/events?since=soon", "").want(t, 400, "bad_position")
	e.do(t, "GET", "/v1/queues/nosuch/events", "").want(t, 404, "unknown_queue")

	// An event before the live follower starts: not streamed to it.
	before := e.do(t, "POST", "/v1/queues/work/tasks", `{"payload":{"do":"first"}}`).want(t, 200, "").body["id"].(string)
	redistest.Eventually(t, 10*time.Second, "the first task done", func() bool {
		return e.do(t, "GET", "/v1/tasks/"+before, "").body["state"] == "succeeded"
	})

	live := follow(ctx, e.srv.Client(), e.srv.URL+"/v1/queues/work/events")
	redistest.Eventually(t, 10*time.Second, "the follower connected", func() bool {
		live.mu.Lock()
		defer live.mu.Unlock()
		return live.status == 200
	})
	id := e.do(t, "POST", "/v1/queues/work/tasks", `{"payload":{"do":"fail"}}`).want(t, 200, "").body["id"].(string)
	var got []sseEvent
	redistest.Eventually(t, 10*time.Second, "three events streamed", func() bool {
		got = parseSSE(t, live.got())
		return len(got) >= 3
	})
	want := []string{">pending", "pending>active", "active>failed"}
	if len(got) != 3 {
		t.Fatalf("%d events, want 3: %+v", len(got), got)
	}
	for i, g := range got {
		if g.kind != "task" || g.id != g.ev.ID || g.ev.Task != id || string(g.ev.Prev)+">"+string(g.ev.State) != want[i] {
			t.Fatalf("event %d: %+v, want task %s %s", i, g, id, want[i])
		}
	}
	if !strings.HasSuffix(got[2].ev.Error, "no such thing") {
		t.Errorf("failed event's error %q", got[2].ev.Error)
	}

	// The whole history: the first task's three events, then these.
	all := follow(ctx, e.srv.Client(), e.srv.URL+"/v1/queues/work/events?since=0")
	var hist []sseEvent
	redistest.Eventually(t, 10*time.Second, "the history streamed", func() bool {
		hist = parseSSE(t, all.got())
		return len(hist) >= 6
	})
	if len(hist) != 6 || hist[0].ev.Task != before || hist[3].id != got[0].id || hist[5].id != got[2].id {
		t.Fatalf("history: %+v", hist)
	}

	// Resuming after the live stream's first event, by query and by the
	// header a reconnecting EventSource sends.
	resumed := follow(ctx, e.srv.Client(), e.srv.URL+"/v1/queues/work/events?since="+got[0].id)
	redistest.Eventually(t, 10*time.Second, "the resumed stream", func() bool {
		return len(parseSSE(t, resumed.got())) >= 2
	})
	if r := parseSSE(t, resumed.got()); len(r) != 2 || r[0].id != got[1].id || r[1].id != got[2].id {
		t.Fatalf("resumed after %s: %+v", got[0].id, r)
	}
	req, _ := http.NewRequestWithContext(ctx, "GET", e.srv.URL+"/v1/queues/work/events", nil)
	req.Header.Set("Last-Event-ID", got[1].id)
	res, err := e.srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	sc := bufio.NewScanner(res.Body)
	if !sc.Scan() || sc.Text() != "id: "+got[2].id {
		t.Fatalf("after Last-Event-ID %s: first line %q, want the id of %s", got[1].id, sc.Text(), got[2].id)
	}

	// Another task: every follower still connected gets its events.
	id2 := e.do(t, "POST", "/v1/queues/work/tasks", `{"payload":{"do":"again"}}`).want(t, 200, "").body["id"].(string)
	redistest.Eventually(t, 10*time.Second, "the next task's events at every follower", func() bool {
		for _, f := range []*follower{live, all, resumed} {
			evs := parseSSE(t, f.got())
			if len(evs) == 0 || evs[len(evs)-1].ev.Task != id2 || evs[len(evs)-1].ev.State != task.Succeeded {
				return false
			}
		}
		return true
	})
}

// Followers of queue events count towards MaxFollowers: one more is
// answered 503 with a Retry-After, and a place frees when one leaves.
func TestQueueEventsFollowersCap(t *testing.T) {
	t.Parallel()
	e := newEnv(t, api.Options{MaxFollowers: 1})
	ctx1, leave1 := context.WithCancel(context.Background())
	defer leave1()
	first := follow(ctx1, e.srv.Client(), e.srv.URL+"/v1/queues/work/events")
	redistest.Eventually(t, 10*time.Second, "the first follower connected", func() bool {
		first.mu.Lock()
		defer first.mu.Unlock()
		return first.status == 200
	})
	if r := e.do(t, "GET", "/v1/queues/work/events", "").want(t, http.StatusServiceUnavailable, "too_many_followers"); r.header.Get("Retry-After") == "" {
		t.Error("503 without a Retry-After")
	}
	leave1()
	<-first.ended
	ctx2, leave2 := context.WithCancel(context.Background())
	defer leave2()
	redistest.Eventually(t, 10*time.Second, "a place freed by the follower that left", func() bool {
		req, _ := http.NewRequestWithContext(ctx2, "GET", e.srv.URL+"/v1/queues/work/events", nil)
		res, err := e.srv.Client().Do(req)
		if err != nil {
			return false
		}
		defer res.Body.Close()
		return res.StatusCode == 200
	})
}

// PUT /v1/queues/{queue}/events turns the queue's events on (with a cap,
// the default one without) and off, live: the queue's row reports the
// setting, Redis holds it (the next enqueue writes an event), and values
// out of range or missing are refused without changing it.
func TestSetQueueEvents(t *testing.T) {
	t.Parallel()
	e := newEnv(t, api.Options{})
	ctx := context.Background()
	ks := rdb.NewKeySpace(e.prefix, "shop")
	events := func(r reply) (bool, float64) {
		t.Helper()
		ev, ok := r.body["events"].(map[string]any)
		if !ok {
			t.Fatalf("no events in %s", r.raw)
		}
		on, _ := ev["enabled"].(bool)
		n, _ := ev["max_len"].(float64)
		return on, n
	}
	stored := func() int64 {
		t.Helper()
		n, err := rdb.EventsCap(ctx, e.client, ks.TaskConfig("work"))
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	if on, n := events(e.do(t, "GET", "/v1/queues/work", "").want(t, 200, "")); on || n != 0 {
		t.Fatalf("events before any setting: %v %v", on, n)
	}
	if on, n := events(e.do(t, "PUT", "/v1/queues/work/events", `{"enabled":true,"max_len":500}`).want(t, 200, "")); !on || n != 500 {
		t.Fatalf("events set: %v %v, want on 500", on, n)
	}
	if n := stored(); n != 500 {
		t.Fatalf("Redis holds a cap of %d, want 500", n)
	}
	id := e.do(t, "POST", "/v1/queues/work/tasks", `{"payload":{"do":"x"}}`).want(t, 200, "").body["id"]
	redistest.Eventually(t, 10*time.Second, fmt.Sprintf("an event of task %v once events were turned on", id), func() bool {
		n, err := e.client.XLen(ctx, ks.TaskEvents("work")).Result()
		return err == nil && n > 0
	})
	for _, bad := range []struct{ body, code string }{
		{`{}`, "bad_json"},
		{`{"enabled":"yes"}`, "bad_json"},
		{`{"enabled":true,"max_len":-1}`, "bad_events"},
		{`{"enabled":true,"max_len":10000001}`, "bad_events"},
		{`{"enabled":false,"max_len":5}`, "bad_events"},
	} {
		e.do(t, "PUT", "/v1/queues/work/events", bad.body).want(t, 400, bad.code)
	}
	if on, n := events(e.do(t, "GET", "/v1/queues/work", "").want(t, 200, "")); !on || n != 500 {
		t.Fatalf("events after refused changes: %v %v, want on 500", on, n)
	}
	if on, n := events(e.do(t, "PUT", "/v1/queues/work/events", `{"enabled":true}`).want(t, 200, "")); !on || n != float64(task.DefaultEventsCap) {
		t.Fatalf("events on without a cap: %v %v, want the default", on, n)
	}
	if on, n := events(e.do(t, "PUT", "/v1/queues/work/events", `{"enabled":false}`).want(t, 200, "")); on || n != 0 {
		t.Fatalf("events off: %v %v", on, n)
	}
	if n := stored(); n != 0 {
		t.Fatalf("Redis holds a cap of %d after events were turned off", n)
	}
	var row map[string]any
	for _, q := range e.do(t, "GET", "/v1/queues", "").want(t, 200, "").body["queues"].([]any) {
		if m := q.(map[string]any); m["queue"] == "work" {
			row = m
		}
	}
	if ev, ok := row["events"].(map[string]any); !ok || ev["enabled"] != false {
		t.Fatalf("GET /v1/queues row of work: %v", row)
	}
	e.do(t, "PUT", "/v1/queues/nope/events", `{"enabled":true}`).want(t, 404, "unknown_queue")
	ro := newEnvOn(t, e.client, e.prefix, api.Options{ReadOnly: true})
	ro.do(t, "PUT", "/v1/queues/work/events", `{"enabled":true}`).want(t, 403, "read_only")
}
