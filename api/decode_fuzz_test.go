package api

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
)

// checkRefusal checks the answer to a refused body: a 4xx JSON error with
// a code and a message.
func checkRefusal(t *testing.T, body []byte, rec *httptest.ResponseRecorder) {
	t.Helper()
	var e apiError
	if err := json.Unmarshal(rec.Body.Bytes(), &e); err != nil || rec.Code < 400 || rec.Code >= 500 || e.Code == "" || e.Error == "" {
		t.Fatalf("body %q refused with %d %q", body, rec.Code, rec.Body.Bytes())
	}
}

// FuzzDecodeEnqueue checks the body of an enqueue or a runsync: a body
// accepted is exactly one JSON object with a payload that is JSON; any
// other is answered 4xx with a JSON error, never a panic or a 5xx.
func FuzzDecodeEnqueue(f *testing.F) {
	for _, s := range []string{
		`{"payload":{"do":"x"}}`,
		`{"payload":null,"id":"t-1","delay":"1m30s","max_retries":3,"timeout":"10s","retention":"1h","unique":"1h","unique_key":"k","priority":"high","key":"c-1","webhook":"https://h/x"}`,
		`{"payload":1,"at":"2026-01-02T15:04:05Z"}`,
		`{"payload":1} {}`, `{"payload":1}}`, `{"payload":1}]`, `[{"payload":1}]`, `{"payload":1,"delay":90}`,
		`{"payload":1,"delay":"-1s"}`, `{"payload":1,"nope":1}`, `{"id":"x"}`, "  \n", `{"payload":1,"max_retries":-1}`,
	} {
		f.Add([]byte(s))
	}
	h := &handler{opts: Options{MaxBody: 1 << 16}}
	f.Fuzz(func(t *testing.T, body []byte) {
		rec := httptest.NewRecorder()
		r := httptest.NewRequest(http.MethodPost, "/v1/queues/q/tasks", bytes.NewReader(body))
		r.Body = http.MaxBytesReader(rec, r.Body, h.opts.MaxBody)
		payload, _, _, ok := h.decodeEnqueue(rec, r)
		if !ok {
			checkRefusal(t, body, rec)
			return
		}
		if rec.Body.Len() > 0 {
			t.Fatalf("accepted %q but answered %q", body, rec.Body.Bytes())
		}
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(body, &obj); err != nil {
			t.Fatalf("accepted %q, which is not one JSON object: %v", body, err)
		}
		if !json.Valid(payload) {
			t.Fatalf("accepted %q with payload %q", body, payload)
		}
	})
}

// FuzzEventRecords checks the body of a send: records accepted are JSON
// values, as many as the array has (one without an array), at most
// maxRecords; any other body is answered 4xx with a JSON error.
func FuzzEventRecords(f *testing.F) {
	for _, s := range []string{
		`{"id":"o-1","amount":5}`, `[{"id":"o-1"},{"id":"o-2"}]`, `[]`, `[1,]`, `{"id":1} {}`, `"x"`, `[{"id":1}] x`, ``, `[null]`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		body = bytes.TrimSpace(body)
		rec := httptest.NewRecorder()
		records := eventRecords(rec, body, 1<<20)
		if records == nil {
			checkRefusal(t, body, rec)
			return
		}
		if rec.Body.Len() > 0 {
			t.Fatalf("accepted %q but answered %q", body, rec.Body.Bytes())
		}
		if !json.Valid(body) || len(records) == 0 || len(records) > maxRecords {
			t.Fatalf("accepted %q as %d records", body, len(records))
		}
		var all []json.RawMessage
		if body[0] == '[' && (json.Unmarshal(body, &all) != nil || len(all) != len(records)) {
			t.Fatalf("accepted %q as %d records, the array has %d", body, len(records), len(all))
		}
		for _, r := range records {
			if !json.Valid(r) {
				t.Fatalf("record %q of %q is not JSON", r, body)
			}
		}
	})
}
