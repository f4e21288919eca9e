package api_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/leatdev/leat/api"
	"github.com/leatdev/leat/app"
	"github.com/leatdev/leat/internal/tools/redistest"
	"github.com/leatdev/leat/stream"
	"github.com/leatdev/leat/task"
	"github.com/redis/go-redis/v9"
)

func TestMain(m *testing.M) { redistest.Main(m) }

type order struct {
	ID     string `json:"id"`
	Amount int    `json:"amount"`
}

type job struct {
	Do  string `json:"do"`
	Pad string `json:"pad,omitempty"`
}

// env is app "shop" on the test server: stream "orders" declared by the
// served app's code, stream "clicks" only in the registry, and a worker
// running queue "work".
type env struct {
	srv    *httptest.Server
	client *redis.Client
	prefix string        // the test's keys
	gate   chan struct{} // releases the "parts" task after its second partial
}

func quietLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func newApp(t *testing.T, c *redis.Client, prefix string) *app.App {
	t.Helper()
	a, err := app.New(app.Config{Name: "shop", Client: c, KeyPrefix: prefix, Logger: quietLogger(), LeaderLease: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	return a
}

func newEnv(t *testing.T, opts api.Options) *env {
	t.Helper()
	c, prefix := redistest.Client(t)
	return newEnvOn(t, c, prefix, opts)
}

// newEnvOn is newEnv on a client and prefix of the caller's.
func newEnvOn(t *testing.T, c *redis.Client, prefix string, opts ...api.Options) *env {
	t.Helper()
	ctx := context.Background()
	e := &env{client: c, prefix: prefix, gate: make(chan struct{})}

	// Another program registered "clicks".
	other := newApp(t, c, prefix)
	if _, err := stream.Declare[map[string]any](other, "clicks", stream.KeyField("user")); err != nil {
		t.Fatal(err)
	}
	if err := other.Register(ctx); err != nil {
		t.Fatal(err)
	}

	// The worker.
	w := newApp(t, c, prefix)
	_, err := task.Handle(w, "work", func(ctx context.Context, tk *task.Task[job]) (string, error) {
		switch tk.Payload.Do {
		case "fail":
			return "", task.SkipRetry(errors.New("no such thing"))
		case "die":
			return "", errors.New("out of luck")
		case "block":
			<-ctx.Done()
			return "", ctx.Err()
		case "parts":
			_ = tk.Progress(map[string]int{"percent": 0})
			_ = tk.Partial("one")
			_ = tk.Partial("two")
			select {
			case <-e.gate:
			case <-ctx.Done():
				return "", ctx.Err()
			}
			_ = tk.Partial("three")
			_ = tk.Progress(map[string]int{"percent": 100})
			return "all parts", nil
		}
		return "did " + tk.Payload.Do, nil
	}, task.MaxRetries(0), task.Priorities("high", "low"))
	if err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); _ = w.Run(wctx) }()
	t.Cleanup(func() { cancel(); <-done })
	redistest.Eventually(t, 10*time.Second, "queue registered", func() bool {
		qs, _ := task.Queues(ctx, w)
		return len(qs) == 1
	})

	// The served app declares "orders" in its code.
	a := newApp(t, c, prefix)
	if _, err := stream.Declare[order](a, "orders", stream.KeyField("id")); err != nil {
		t.Fatal(err)
	}
	if err := a.Register(ctx); err != nil {
		t.Fatal(err)
	}
	var o api.Options
	if len(opts) > 0 {
		o = opts[0]
	}
	e.srv = httptest.NewServer(api.NewHandler(a, o))
	t.Cleanup(e.srv.Close)
	return e
}

type reply struct {
	status int
	header http.Header
	body   map[string]any
	raw    string
}

func (e *env) do(t *testing.T, method, path, body string, hdr ...string) reply {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, e.srv.URL+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		if hdr[i] == "Host" {
			req.Host = hdr[i+1]
			continue
		}
		req.Header.Set(hdr[i], hdr[i+1])
	}
	res, err := e.srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	r := reply{status: res.StatusCode, header: res.Header, raw: string(b)}
	if ct := res.Header.Get("Content-Type"); ct != "application/json" {
		t.Fatalf("%s %s: content type %q: %s", method, path, ct, b)
	}
	if err := json.Unmarshal(b, &r.body); err != nil {
		var arr []any
		if json.Unmarshal(b, &arr) != nil {
			t.Fatalf("%s %s: body %q: %v", method, path, b, err)
		}
	}
	return r
}

// want checks the status and, for errors, the code.
func (r reply) want(t *testing.T, status int, code string) reply {
	t.Helper()
	if r.status != status {
		t.Fatalf("status %d, want %d: %s", r.status, status, r.raw)
	}
	if code != "" {
		if r.body["code"] != code || r.body["error"] == "" || r.body["error"] == nil {
			t.Fatalf("code %v, want %q: %s", r.body["code"], code, r.raw)
		}
	}
	return r
}

func TestSendEvents(t *testing.T) {
	t.Parallel()
	e := newEnv(t, api.Options{})
	r := e.do(t, "POST", "/v1/streams/orders/events", `{"id":"o1","amount":3}`).want(t, 200, "")
	if ids := r.body["ids"].([]any); len(ids) != 1 || !strings.Contains(ids[0].(string), "-") {
		t.Fatalf("ids: %s", r.raw)
	}
	r = e.do(t, "POST", "/v1/streams/orders/events", `[{"id":"o2","amount":1},{"id":"o3","amount":2}]`).want(t, 200, "")
	if ids := r.body["ids"].([]any); len(ids) != 2 {
		t.Fatalf("ids: %s", r.raw)
	}
	// From the registry only.
	e.do(t, "POST", "/v1/streams/clicks/events", `{"user":"u1","page":"/"}`).want(t, 200, "")
	e.do(t, "POST", "/v1/streams/clicks/events", `{"page":"/"}`).want(t, 400, "bad_record")

	// Bad input.
	r = e.do(t, "POST", "/v1/streams/orders/events", `{"id":"o1","amount":"three"}`).want(t, 400, "bad_record")
	if !strings.Contains(r.body["error"].(string), "amount") {
		t.Fatalf("error does not name the field: %s", r.raw)
	}
	r = e.do(t, "POST", "/v1/streams/orders/events", `[{"id":"o1","amount":1},{"id":"o1","colour":"red"}]`).want(t, 400, "bad_record")
	if !strings.Contains(r.body["error"].(string), "record 1") {
		t.Fatalf("error does not name the record: %s", r.raw)
	}
	r = e.do(t, "POST", "/v1/streams/orders/events", `[{"id":"o1","amount":1},{"id":"o1","amount":1,"amount":2}]`).want(t, 400, "bad_record")
	if !strings.Contains(r.body["error"].(string), `record 1: field "amount" appears twice`) {
		t.Fatalf("error does not name the record and the field twice: %s", r.raw)
	}
	e.do(t, "POST", "/v1/streams/orders/events", `{"id":"o1",`).want(t, 400, "bad_json")
	e.do(t, "POST", "/v1/streams/orders/events", `[{"id":"o1"},`).want(t, 400, "bad_json")
	e.do(t, "POST", "/v1/streams/orders/events", ``).want(t, 400, "bad_json")
	e.do(t, "POST", "/v1/streams/orders/events", `[]`).want(t, 400, "bad_json")
	e.do(t, "POST", "/v1/streams/nope/events", `{"id":"x"}`).want(t, 404, "unknown_stream")
	e.do(t, "POST", "/v1/streams/bad%20name/events", `{"id":"x"}`).want(t, 400, "bad_name")
	big := `{"id":"o1","amount":1,"pad":"` + strings.Repeat("x", api.DefaultMaxBody) + `"}`
	e.do(t, "POST", "/v1/streams/orders/events", big).want(t, 413, "too_large")

	// Nothing bad was written (keys of this test's only: others run beside it).
	n := int64(0)
	keys, _ := e.client.Keys(context.Background(), e.prefix+":*orders*").Result()
	for _, k := range keys {
		if typ, _ := e.client.Type(context.Background(), k).Result(); typ == "stream" {
			n += e.client.XLen(context.Background(), k).Val()
		}
	}
	if n != 3 {
		t.Fatalf("%d entries in orders, want 3", n)
	}

	// Reads.
	r = e.do(t, "GET", "/v1/streams/orders", "").want(t, 200, "")
	if r.body["stream"] != "orders" || r.body["length"] != 3.0 {
		t.Fatalf("stream report: %s", r.raw)
	}
	e.do(t, "GET", "/v1/streams/nope", "").want(t, 404, "unknown_stream")
	r = e.do(t, "GET", "/v1/overview", "").want(t, 200, "")
	if !strings.Contains(r.raw, "clicks") || !strings.Contains(r.raw, "orders") {
		t.Fatalf("overview: %s", r.raw)
	}
	e.do(t, "GET", "/v1/nothing", "").want(t, 404, "no_endpoint")
	e.do(t, "DELETE", "/v1/overview", "").want(t, 405, "method_not_allowed")
}

func TestTasks(t *testing.T) {
	t.Parallel()
	e := newEnv(t, api.Options{})

	// Enqueue and read.
	r := e.do(t, "POST", "/v1/queues/work/tasks", `{"payload":{"do":"x"},"priority":"high","id":"t1","headers":{"tenant":"acme"}}`).want(t, 200, "")
	if r.body["id"] != "t1" {
		t.Fatalf("enqueue: %s", r.raw)
	}
	redistest.Eventually(t, 10*time.Second, "task t1 succeeded", func() bool {
		r := e.do(t, "GET", "/v1/tasks/t1", "")
		return r.status == 200 && r.body["state"] == "succeeded"
	})
	r = e.do(t, "GET", "/v1/queues/work/tasks/t1", "").want(t, 200, "")
	if h, _ := r.body["headers"].(map[string]any); r.body["result"] != "did x" || r.body["priority"] != "high" || len(h) != 1 || h["tenant"] != "acme" {
		t.Fatalf("info: %s", r.raw)
	}
	r = e.do(t, "POST", "/v1/queues/work/tasks", `{"payload":{"do":"x"},"id":"t1"}`).want(t, 409, "duplicate")
	if r.body["id"] != "t1" {
		t.Fatalf("duplicate: %s", r.raw)
	}
	first := e.do(t, "POST", "/v1/queues/work/tasks", `{"payload":{"do":"later"},"unique":"1h","delay":"1h"}`).want(t, 200, "")
	r = e.do(t, "POST", "/v1/queues/work/tasks", `{"payload":{"do":"later"},"unique":"1h","delay":"1h"}`).want(t, 409, "duplicate")
	if r.body["id"] != first.body["id"] {
		t.Fatalf("unique: %s vs %s", r.raw, first.raw)
	}
	// Counts.
	r = e.do(t, "GET", "/v1/queues", "").want(t, 200, "")
	q := r.body["queues"].([]any)[0].(map[string]any)
	if q["queue"] != "work" || q["counts"].(map[string]any)["scheduled"] != 1.0 || q["counts"].(map[string]any)["succeeded"] != 1.0 {
		t.Fatalf("queues: %s", r.raw)
	}
	e.do(t, "GET", "/v1/queues/work", "").want(t, 200, "")
	e.do(t, "GET", "/v1/queues/nope", "").want(t, 404, "unknown_queue")

	// Cancel, requeue.
	id := first.body["id"].(string)
	r = e.do(t, "POST", "/v1/queues/work/tasks/"+id+"/cancel", "").want(t, 200, "")
	if r.body["state_before"] != "scheduled" {
		t.Fatalf("cancel: %s", r.raw)
	}
	e.do(t, "POST", "/v1/tasks/"+id+"/cancel", "").want(t, 409, "wrong_state")
	e.do(t, "POST", "/v1/tasks/"+id+"/requeue", "").want(t, 409, "wrong_state")
	f := e.do(t, "POST", "/v1/queues/work/runsync", `{"payload":{"do":"fail"}}`).want(t, 422, "task_failed")
	if !strings.Contains(f.body["error"].(string), "no such thing") {
		t.Fatalf("runsync failure: %s", f.raw)
	}
	fid := f.body["id"].(string)
	r = e.do(t, "POST", "/v1/queues/work/tasks/"+fid+"/requeue", "").want(t, 200, "")
	redistest.Eventually(t, 10*time.Second, "requeued task failed again", func() bool {
		r := e.do(t, "GET", "/v1/tasks/"+fid, "")
		return r.body["state"] == "failed" && r.body["attempts"] == 1.0
	})
	// Delete: an ended task at once; one waiting is refused.
	e.do(t, "DELETE", "/v1/tasks/"+first.body["id"].(string), "").want(t, 200, "")
	e.do(t, "GET", "/v1/tasks/"+first.body["id"].(string), "").want(t, 404, "unknown_task")
	r = e.do(t, "DELETE", "/v1/queues/work/tasks/"+fid, "").want(t, 200, "")
	if r.body["state_before"] != "failed" {
		t.Fatalf("delete: %s", r.raw)
	}
	e.do(t, "DELETE", "/v1/tasks/none", "").want(t, 404, "unknown_task")
	waiting := e.do(t, "POST", "/v1/queues/work/tasks", `{"payload":{"do":"x"},"delay":"1h"}`).want(t, 200, "")
	e.do(t, "DELETE", "/v1/tasks/"+waiting.body["id"].(string), "").want(t, 409, "wrong_state")
	// Every dead task at once: requeued (they run and die again), then
	// deleted.
	deadCount := func() any {
		return e.do(t, "GET", "/v1/queues/work", "").want(t, 200, "").body["counts"].(map[string]any)["dead"]
	}
	for range 2 {
		e.do(t, "POST", "/v1/queues/work/tasks", `{"payload":{"do":"die"}}`).want(t, 200, "")
	}
	redistest.Eventually(t, 10*time.Second, "two dead tasks", func() bool { return deadCount() == 2.0 })
	r = e.do(t, "POST", "/v1/queues/work/dead/requeue", "").want(t, 200, "")
	if r.body["queue"] != "work" || r.body["requeued"] != 2.0 {
		t.Fatalf("requeue dead: %s", r.raw)
	}
	redistest.Eventually(t, 10*time.Second, "the requeued tasks dead again", func() bool {
		r := e.do(t, "GET", "/v1/queues/work/tasks?state=dead", "").want(t, 200, "")
		tasks, _ := r.body["tasks"].([]any)
		if len(tasks) != 2 {
			return false
		}
		for _, tk := range tasks {
			if tk.(map[string]any)["attempts"] != 1.0 {
				return false
			}
		}
		return true
	})
	r = e.do(t, "DELETE", "/v1/queues/work/dead", "").want(t, 200, "")
	if r.body["deleted"] != 2.0 {
		t.Fatalf("delete dead: %s", r.raw)
	}
	if n := deadCount(); n != nil && n != 0.0 {
		t.Fatalf("%v dead tasks after deleting them all", n)
	}
	e.do(t, "DELETE", "/v1/queues/nope/dead", "").want(t, 404, "unknown_queue")
	e.do(t, "POST", "/v1/tasks/none/cancel", "").want(t, 404, "unknown_task")
	e.do(t, "POST", "/v1/queues/work/tasks/none/requeue", "").want(t, 404, "unknown_task")
	e.do(t, "GET", "/v1/tasks/none", "").want(t, 404, "unknown_task")
	e.do(t, "GET", "/v1/queues/work/tasks/none", "").want(t, 404, "unknown_task")

	// Runsync.
	r = e.do(t, "POST", "/v1/queues/work/runsync?timeout=10s", `{"payload":{"do":"y"}}`).want(t, 200, "")
	if r.body["result"] != "did y" || r.body["state"] != "succeeded" {
		t.Fatalf("runsync: %s", r.raw)
	}
	r = e.do(t, "POST", "/v1/queues/work/runsync?timeout=300ms", `{"payload":{"do":"block"}}`).want(t, 504, "timeout")
	bid := r.body["id"].(string)
	e.do(t, "POST", "/v1/tasks/"+bid+"/cancel", "").want(t, 200, "")
	redistest.Eventually(t, 10*time.Second, "blocked task cancelled", func() bool {
		return e.do(t, "GET", "/v1/tasks/"+bid, "").body["state"] == "cancelled"
	})
	e.do(t, "POST", "/v1/queues/work/runsync?timeout=soon", `{"payload":{}}`).want(t, 400, "bad_timeout")
	e.do(t, "POST", "/v1/queues/work/runsync?timeout=-1s", `{"payload":{}}`).want(t, 400, "bad_timeout")
	e.do(t, "POST", "/v1/queues/work/runsync?timeout=1000h", `{"payload":{}}`).want(t, 400, "bad_timeout")

	// Bad input.
	for _, c := range []struct{ body, code, says string }{
		{`{"payload":{},"colour":"red"}`, "bad_json", "colour"},
		{`{"payload":{},"delay":10}`, "bad_json", "duration"},
		{`{"payload":{},"delay":"soon"}`, "bad_json", `duration "soon": want a number and a unit`},
		{`{"payload":{},"delay":"1x"}`, "bad_json", `duration "1x": want a number and a unit`},
		{`{"payload":{},"max_retries":"x"}`, "bad_json", "max_retries"},
		{`{"payload":{},"max_retries":-2}`, "bad_task", "negative"},
		// Text encoding/json would decode with replacements, or by
		// dropping a value, anywhere in the body.
		{`{"payload":{"t":"\ud800"}}`, "bad_json", `\ud800 is half of a UTF-16 surrogate pair`},
		{"{\"payload\":{\"t\":\"\xff\"}}", "bad_json", "invalid UTF-8"},
		{"{\"payload\":1,\"unique_key\":\"k\xff\"}", "bad_json", "invalid UTF-8"},
		{`{"payload":{},"payload":2}`, "bad_json", `field "payload" appears twice`},
		{`{"payload":{"n":1,"n":2}}`, "bad_json", `field "payload.n" appears twice`},
		{`{"payload":{},"priority":"urgent"}`, "bad_task", "urgent"},
		{`{"payload":{},"key":"k"}`, "bad_task", "keyed"},
		{`{"payload":{},"id":"a b"}`, "bad_task", "invalid"},
		{`{"payload":{},"unique_key":"k"}`, "bad_task", "unique"},
		{`{"payload":{},"webhook":"ftp://x"}`, "bad_task", "ftp"},
		{`{"payload":{},"webhook":"http://169.254.169.254/latest"}`, "bad_task", "link-local"},
		{`{"payload":{},"webhook":"https://h/x","webhook_secret":"hunter2"}`, "bad_task", "webhook secret"},
		{`{"payload":{},"id":"cron:nightly:1798761600000"}`, "bad_task", "reserved"},
		{`{"payload":{},"retention":"2558000h"}`, "bad_task", "out of range"},
		{`{"payload":{},"max_retries":9223372036854775807}`, "bad_task", "out of range"},
		{`{"payload":{},"headers":{"n":1}}`, "bad_json", "headers"},
		{`{"payload":{},"headers":{"":"x"}}`, "bad_task", "header name is empty"},
		{`{"id":"t9"}`, "bad_json", "payload"},
		{`{"payload":{}}{}`, "bad_json", "more than one"},
		{`{"payload":`, "bad_json", ""},
		{`[1]`, "bad_json", "array"},
		{``, "bad_json", "empty"},
	} {
		r := e.do(t, "POST", "/v1/queues/work/tasks", c.body).want(t, 400, c.code)
		if !strings.Contains(r.body["error"].(string), c.says) {
			t.Errorf("%s: error %q does not say %q", c.body, r.body["error"], c.says)
		}
	}
	e.do(t, "POST", "/v1/queues/nope/tasks", `{"payload":{}}`).want(t, 404, "unknown_queue")
	e.do(t, "POST", "/v1/queues/bad%20name/tasks", `{"payload":{}}`).want(t, 400, "bad_name")
	big := `{"payload":"` + strings.Repeat("x", api.DefaultMaxBody) + `"}`
	e.do(t, "POST", "/v1/queues/work/tasks", big).want(t, 413, "too_large")
	e.do(t, "POST", "/v1/queues/work/runsync", big).want(t, 413, "too_large")
}

// sse reads server-sent events.
type sse struct {
	res *http.Response
	sc  *bufio.Scanner
}

// update is the data of an event: a task.Update whose info, as the API
// answers a task, gives its durations as strings.
type update struct {
	Kind    string          `json:"kind"`
	Data    json.RawMessage `json:"data"`
	Attempt int             `json:"attempt"`
	Info    *struct {
		State     task.State      `json:"state"`
		Result    json.RawMessage `json:"result"`
		Timeout   string          `json:"timeout"`
		Retention string          `json:"retention"`
	} `json:"info"`
}

func (s *sse) next(t *testing.T) (string, update) {
	t.Helper()
	var event, data string
	for s.sc.Scan() {
		line := s.sc.Text()
		switch {
		case line == "" && event != "":
			var u update
			if err := json.Unmarshal([]byte(data), &u); err != nil {
				t.Fatalf("event %s: %v", data, err)
			}
			return event, u
		case strings.HasPrefix(line, "event: "):
			event = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			data = strings.TrimPrefix(line, "data: ")
		}
	}
	t.Fatalf("events ended: %v", s.sc.Err())
	return "", update{}
}

func TestFollowEvents(t *testing.T) {
	t.Parallel()
	e := newEnv(t, api.Options{Token: "s3cret"})
	auth := []string{"Authorization", "Bearer s3cret"}
	r := e.do(t, "POST", "/v1/queues/work/tasks", `{"payload":{"do":"parts"}}`, auth...).want(t, 200, "")
	id := r.body["id"].(string)

	req, _ := http.NewRequest("GET", e.srv.URL+"/v1/queues/work/tasks/"+id+"/events", nil)
	req.Header.Set(auth[0], auth[1])
	res, err := e.srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if res.StatusCode != 200 || res.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("events: %d %s", res.StatusCode, res.Header.Get("Content-Type"))
	}
	s := &sse{res: res, sc: bufio.NewScanner(res.Body)}
	var got []string
	read := func() (string, update) {
		kind, u := s.next(t)
		if kind != u.Kind {
			t.Fatalf("event %q carries kind %q", kind, u.Kind)
		}
		if kind == task.KindPartial {
			var v string
			_ = json.Unmarshal(u.Data, &v)
			got = append(got, v)
		}
		return kind, u
	}
	// The first partials arrive while the handler waits at its gate.
	for len(got) < 2 {
		read()
	}
	if info := e.do(t, "GET", "/v1/tasks/"+id, "", auth...).want(t, 200, ""); info.body["state"] != "active" {
		t.Fatalf("task not running while its partials arrived: %s", info.raw)
	}
	close(e.gate)
	var last update
	for {
		kind, u := read()
		if kind == task.KindDone {
			last = u
			break
		}
	}
	if strings.Join(got, ",") != "one,two,three" {
		t.Fatalf("partials %v", got)
	}
	if last.Info == nil || last.Info.State != task.Succeeded || string(last.Info.Result) != `"all parts"` {
		t.Fatalf("done: %+v", last.Info)
	}
	if s.sc.Scan() {
		t.Fatalf("more after done: %q", s.sc.Text())
	}

	// A finished task replays its updates.
	req, _ = http.NewRequest("GET", e.srv.URL+"/v1/tasks/"+id+"/events", nil)
	req.Header.Set(auth[0], auth[1])
	res2, err := e.srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res2.Body.Close()
	b, _ := io.ReadAll(res2.Body)
	if strings.Count(string(b), "event: partial") != 3 || !strings.HasSuffix(string(b), "\n\n") || !strings.Contains(string(b), "event: done") {
		t.Fatalf("replay: %s", b)
	}
	e.do(t, "GET", "/v1/tasks/none/events", "", auth...).want(t, 404, "unknown_task")
}

// POST .../pause and .../resume pause and resume a queue: its tasks wait
// while it is paused, and the queue rows say since when.
func TestPauseResume(t *testing.T) {
	t.Parallel()
	e := newEnv(t, api.Options{})
	r := e.do(t, "POST", "/v1/queues/work/pause", "").want(t, 200, "")
	at, ok := r.body["paused_at"].(string)
	if !ok || r.body["queue"] != "work" {
		t.Fatalf("pause: %s", r.raw)
	}
	if _, err := time.Parse(time.RFC3339, at); err != nil {
		t.Fatalf("paused_at %q: %v", at, err)
	}
	if r := e.do(t, "POST", "/v1/queues/work/pause", "").want(t, 200, ""); r.body["paused_at"] != at {
		t.Fatalf("a second pause moved paused_at from %s: %s", at, r.raw)
	}
	r = e.do(t, "GET", "/v1/queues", "").want(t, 200, "")
	if q := r.body["queues"].([]any)[0].(map[string]any); q["paused_at"] != at {
		t.Fatalf("queues while paused: %s", r.raw)
	}
	e.do(t, "POST", "/v1/queues/work/tasks", `{"payload":{"do":"x"},"id":"p1"}`).want(t, 200, "")
	if r := e.do(t, "GET", "/v1/tasks/p1", "").want(t, 200, ""); r.body["state"] != "pending" {
		t.Fatalf("task enqueued while paused: %s", r.raw)
	}
	r = e.do(t, "POST", "/v1/queues/work/resume", "").want(t, 200, "")
	if v, present := r.body["paused_at"]; !present || v != nil {
		t.Fatalf("resume: %s", r.raw)
	}
	redistest.Eventually(t, 10*time.Second, "task p1 succeeded after the resume", func() bool {
		r := e.do(t, "GET", "/v1/tasks/p1", "")
		return r.status == 200 && r.body["state"] == "succeeded"
	})
	e.do(t, "POST", "/v1/queues/nope/pause", "").want(t, 404, "unknown_queue")
	e.do(t, "POST", "/v1/queues/a:b/resume", "").want(t, 400, "bad_name")
}

// A queue's rate limit is set live, lifted and cleared through the API;
// each answer, and the queue's row, says which applies.
func TestQueueRate(t *testing.T) {
	t.Parallel()
	e := newEnv(t, api.Options{})
	rate := func(r reply) map[string]any {
		t.Helper()
		m, ok := r.body["rate"].(map[string]any)
		if !ok {
			t.Fatalf("no rate in %s", r.raw)
		}
		return m
	}
	if got := rate(e.do(t, "GET", "/v1/queues/work", "").want(t, 200, "")); got["n"] != 0.0 || got["live"] != false {
		t.Fatalf("rate before any: %v", got)
	}
	if got := rate(e.do(t, "PUT", "/v1/queues/work/rate", `{"n":100,"window":"1s"}`).want(t, 200, "")); got["n"] != 100.0 || got["window"] != "1s" || got["live"] != true {
		t.Fatalf("rate set: %v", got)
	}
	r := e.do(t, "GET", "/v1/queues", "").want(t, 200, "")
	if got := r.body["queues"].([]any)[0].(map[string]any)["rate"].(map[string]any); got["n"] != 100.0 || got["live"] != true {
		t.Fatalf("queues' rate: %s", r.raw)
	}
	if got := rate(e.do(t, "PUT", "/v1/queues/work/rate", `{"n":0}`).want(t, 200, "")); got["n"] != 0.0 || got["live"] != true {
		t.Fatalf("rate lifted: %v", got)
	}
	if got := rate(e.do(t, "DELETE", "/v1/queues/work/rate", "").want(t, 200, "")); got["n"] != 0.0 || got["live"] != false {
		t.Fatalf("rate cleared: %v", got)
	}
	for _, bad := range []struct{ body, code, says string }{
		{`{"window":"1s"}`, "bad_json", `"n" is missing`},
		{`{"n":1.5,"window":"1s"}`, "bad_json", "n"},
		{`{"n":5,"window":"fast"}`, "bad_json", "duration"},
		{`{"n":5,"window":"1s","burst":2}`, "bad_json", "burst"},
		{`{"n":5}`, "bad_rate", "at least 1ms"},
		{`{"n":-1,"window":"1s"}`, "bad_rate", "n >= 1"},
		{`{"n":0,"window":"1s"}`, "bad_rate", "0 per 0"},
	} {
		r := e.do(t, "PUT", "/v1/queues/work/rate", bad.body).want(t, 400, bad.code)
		if !strings.Contains(r.body["error"].(string), bad.says) {
			t.Errorf("%s: %s, want it to say %q", bad.body, r.raw, bad.says)
		}
	}
	e.do(t, "PUT", "/v1/queues/nope/rate", `{"n":1,"window":"1s"}`).want(t, 404, "unknown_queue")
	if got := rate(e.do(t, "GET", "/v1/queues/work", "").want(t, 200, "")); got["live"] != false {
		t.Fatalf("a refused request changed the rate: %v", got)
	}
}

// A queue's concurrency per worker is set live and cleared through the
// API; each answer says which applies.
func TestQueueConcurrency(t *testing.T) {
	t.Parallel()
	e := newEnv(t, api.Options{})
	conc := func(r reply) map[string]any {
		t.Helper()
		m, ok := r.body["concurrency"].(map[string]any)
		if !ok {
			t.Fatalf("no concurrency in %s", r.raw)
		}
		return m
	}
	before := conc(e.do(t, "GET", "/v1/queues/work", "").want(t, 200, ""))
	if before["live"] != false || before["n"].(float64) < 1 {
		t.Fatalf("concurrency before any: %v", before)
	}
	if got := conc(e.do(t, "PUT", "/v1/queues/work/concurrency", `{"n":7}`).want(t, 200, "")); got["n"] != 7.0 || got["live"] != true {
		t.Fatalf("concurrency set: %v", got)
	}
	e.do(t, "PUT", "/v1/queues/work/concurrency", `{"n":0}`).want(t, 400, "bad_concurrency")
	e.do(t, "PUT", "/v1/queues/work/concurrency", `{"n":1000000000}`).want(t, 400, "bad_concurrency")
	e.do(t, "PUT", "/v1/queues/work/concurrency", `{}`).want(t, 400, "bad_json")
	e.do(t, "PUT", "/v1/queues/work/concurrency", `{"n":"7"}`).want(t, 400, "bad_json")
	if got := conc(e.do(t, "DELETE", "/v1/queues/work/concurrency", "").want(t, 200, "")); got["n"] != before["n"] || got["live"] != false {
		t.Fatalf("concurrency cleared: %v, want %v", got, before)
	}
	e.do(t, "PUT", "/v1/queues/nope/concurrency", `{"n":1}`).want(t, 404, "unknown_queue")
}

// PUT global-concurrency caps a queue's running tasks over all workers,
// shown in the queue's row; 0 lifts it, and bad values are refused.
func TestSetGlobalConcurrency(t *testing.T) {
	t.Parallel()
	e := newEnv(t, api.Options{})
	global := func(r reply) float64 {
		t.Helper()
		n, ok := r.body["global_concurrency"].(float64)
		if !ok {
			t.Fatalf("no global_concurrency in %s", r.raw)
		}
		return n
	}
	if n := global(e.do(t, "GET", "/v1/queues/work", "").want(t, 200, "")); n != 0 {
		t.Fatalf("global concurrency before any: %v", n)
	}
	if n := global(e.do(t, "PUT", "/v1/queues/work/global-concurrency", `{"n":4}`).want(t, 200, "")); n != 4 {
		t.Fatalf("global concurrency set: %v", n)
	}
	e.do(t, "PUT", "/v1/queues/work/global-concurrency", `{"n":-1}`).want(t, 400, "bad_concurrency")
	e.do(t, "PUT", "/v1/queues/work/global-concurrency", `{"n":1000001}`).want(t, 400, "bad_concurrency")
	e.do(t, "PUT", "/v1/queues/work/global-concurrency", `{}`).want(t, 400, "bad_json")
	if n := global(e.do(t, "GET", "/v1/queues/work", "").want(t, 200, "")); n != 4 {
		t.Fatalf("global concurrency after refused changes: %v, want 4", n)
	}
	if n := global(e.do(t, "PUT", "/v1/queues/work/global-concurrency", `{"n":0}`).want(t, 200, "")); n != 0 {
		t.Fatalf("global concurrency lifted: %v", n)
	}
	e.do(t, "PUT", "/v1/queues/nope/global-concurrency", `{"n":1}`).want(t, 404, "unknown_queue")
}

func TestAuthAndReadOnly(t *testing.T) {
	t.Parallel()
	e := newEnv(t, api.Options{Token: "s3cret", ReadOnly: true, MaxBody: 64})
	for _, hdr := range [][]string{nil, {"Authorization", "Bearer wrong"}, {"Authorization", "s3cret"}, {"Authorization", "Basic s3cret"}} {
		e.do(t, "GET", "/v1/overview", "", hdr...).want(t, 401, "unauthorized")
		e.do(t, "POST", "/v1/queues/work/tasks", `{"payload":{}}`, hdr...).want(t, 401, "unauthorized")
	}
	auth := []string{"Authorization", "Bearer s3cret"}
	e.do(t, "GET", "/v1/overview", "", auth...).want(t, 200, "")
	e.do(t, "GET", "/v1/queues", "", auth...).want(t, 200, "")
	for _, p := range []string{"/v1/tasks/x", "/v1/queues/work/tasks/x", "/v1/queues/work/dead", "/v1/streams/orders/processors/totals/dead", "/v1/queues/work/rate", "/v1/queues/work/concurrency"} {
		e.do(t, "DELETE", p, "", auth...).want(t, 403, "read_only")
	}
	e.do(t, "PUT", "/v1/queues/work/rate", `{"n":1}`, auth...).want(t, 403, "read_only")
	e.do(t, "PUT", "/v1/queues/work/concurrency", `{"n":1}`, auth...).want(t, 403, "read_only")
	for _, p := range []string{"/v1/streams/orders/events", "/v1/queues/work/tasks", "/v1/queues/work/runsync",
		"/v1/queues/work/tasks/x/cancel", "/v1/queues/work/tasks/x/requeue", "/v1/tasks/x/cancel", "/v1/tasks/x/requeue",
		"/v1/queues/work/pause", "/v1/queues/work/resume", "/v1/queues/work/dead/requeue",
		"/v1/streams/orders/processors/totals/dead/replay"} {
		e.do(t, "POST", p, `{"payload":{}}`, auth...).want(t, 403, "read_only")
	}
	// The size limit applies before anything else is read.
	e.do(t, "POST", "/v1/queues/work/tasks", `{"payload":"`+strings.Repeat("x", 100)+`"}`, auth...).want(t, 413, "too_large")
}

func TestCustomBodyLimit(t *testing.T) {
	t.Parallel()
	e := newEnv(t, api.Options{MaxBody: 100})
	e.do(t, "POST", "/v1/queues/work/tasks", `{"payload":{"do":"`+strings.Repeat("x", 76)+`"}}`).want(t, 200, "")
	r := e.do(t, "POST", "/v1/queues/work/tasks", `{"payload":"`+strings.Repeat("x", 101)+`"}`).want(t, 413, "too_large")
	if !strings.Contains(r.body["error"].(string), "100 bytes") {
		t.Fatalf("limit not named: %s", r.raw)
	}
}

// Served by a program that declares a queue with a payload type, the API
// refuses payloads that type's handlers would not decode exactly; served
// by a program that knows only the registry, it refuses them too, by the
// schema the workers' program recorded there.
func TestEnqueueChecksDeclaredPayload(t *testing.T) {
	t.Parallel()
	e := newEnv(t, api.Options{})
	a := newApp(t, e.client, e.prefix)
	if _, err := task.Declare[job, string](a, "work", task.MaxRetries(0), task.Priorities("high", "low")); err != nil {
		t.Fatal(err)
	}
	typed := &env{client: e.client, prefix: e.prefix, srv: httptest.NewServer(api.NewHandler(a, api.Options{}))}
	t.Cleanup(typed.srv.Close)
	for _, c := range []struct{ body, says, registry string }{
		{`{"payload":{"do":"x","extra":1}}`, `unknown field "extra"`, `unknown field "extra"; known: do, pad`},
		{`{"payload":{"do":5}}`, `field "do": number does not fit (want a string)`, `field "do": want a string, got a number`},
		{`{"payload":1}`, `number does not fit the payload (want an object)`, `payload 0: want an object, got a number`},
	} {
		r := typed.do(t, "POST", "/v1/queues/work/tasks", c.body).want(t, 400, "bad_task")
		if !strings.Contains(r.body["error"].(string), c.says) {
			t.Errorf("%s: error %q does not say %q", c.body, r.body["error"], c.says)
		}
		r = e.do(t, "POST", "/v1/queues/work/tasks", c.body).want(t, 400, "bad_task") // a program that knows only the registry
		if !strings.Contains(r.body["error"].(string), c.registry) {
			t.Errorf("%s: error %q does not say %q", c.body, r.body["error"], c.registry)
		}
	}
	typed.do(t, "POST", "/v1/queues/work/tasks", `{"payload":{"do":"x"}}`).want(t, 200, "")
}
