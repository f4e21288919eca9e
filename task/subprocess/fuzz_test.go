package subprocess

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"testing"

	"github.com/leatdev/leat/task"
)

// FuzzReadLine checks readLine against splitting the output at newlines:
// every line comes back without its newline, in order, the last one (which
// may be empty) with io.EOF; a line of more than limit bytes comes back
// empty and flagged, whether or not a newline ends it. The reader's buffer
// is small so that long lines arrive in fragments.
func FuzzReadLine(f *testing.F) {
	f.Add([]byte("{\"status\":\"ready\"}\n{\"task_id\":\"t\",\"result\":1}\n"), uint8(32))
	f.Add([]byte("0123456789abcdefXYZ\nshort\n"), uint8(16))
	f.Add([]byte("0123456789abcdefX"), uint8(16))
	f.Add([]byte("\n\n\r\n"), uint8(0))
	f.Fuzz(func(t *testing.T, data []byte, limit uint8) {
		br := bufio.NewReaderSize(bytes.NewReader(data), 16)
		want := bytes.Split(data, []byte("\n"))
		for i, w := range want {
			line, tooLong, err := readLine(br, int(limit))
			last := i == len(want)-1
			if (err == io.EOF) != last || (err != nil && err != io.EOF) {
				t.Fatalf("line %d of %q: error %v (last: %v)", i, data, err, last)
			}
			if over := len(w) > int(limit); tooLong != over || (over && len(line) > 0) || (!over && !bytes.Equal(line, w)) {
				t.Fatalf("line %d of %q with limit %d: %q, tooLong %v; want %q", i, data, limit, line, tooLong, w)
			}
		}
	})
}

// FuzzExecProtocol feeds readStdout (and so dispatch) a handler process's
// output while task "t1" runs on it. Whatever the bytes: no panic, at most
// one answer, no report for the task after its answer, and every report and
// result is valid JSON (it is stored and served as JSON).
func FuzzExecProtocol(f *testing.F) {
	f.Add([]byte(`{"status":"ready"}` + "\n" + `{"task_id":"t1","progress":{"done":1,"of":3}}` + "\n" +
		`{"task_id":"t1","partial":[1, 2]}` + "\n" + `{"task_id":"t1","result":{"ok":true}}` + "\n"))
	f.Add([]byte(`{"status":"ready"}` + "\n" + `{"task_id":"t1","error":"boom","retry":false}` + "\n"))
	f.Add([]byte(`{"status":"ready"}` + "\n" + `{"task_id":"t1","error":""}` + "\n"))
	f.Add([]byte(`{"status":"ready","task_id":null}` + "\n" +
		`{"task_id":"t1","result":1,"progress":null,"partial":null,"error":null,"snooze":null,"retry":null}` + "\n"))
	f.Add([]byte(`{"task_id":"t1","result":1}` + "\n" + `{"status":"ready"}` + "\n" + "not json\n" +
		`{"task_id":"t2","result":2}` + "\n" + `{"task_id":"t1"}`))
	f.Add([]byte(`{"status":"ready"}` + "\n" + `{"task_id":"t1","progress":"` + string(bytes.Repeat([]byte("x"), 80)) + `"}` + "\n"))
	f.Add([]byte(`{"status":"ready","concurrency":3}` + "\n" + `{"concurrency":0}` + "\n" + `{"concurrency":2.5}` + "\n" +
		`{"task_id":"t1","concurrency":"2"}` + "\n" + `{"task_id":"t1","result":null,"refresh_worker":true,"concurrency":1}` + "\n"))
	f.Add([]byte(`{"status":"ready"}` + "\n" + `{"task_id":"t1","concurrency":-1,"refresh_worker":"yes"}` + "\n" +
		`{"task_id":"t1","snooze":1,"refresh_worker":true}` + "\n"))
	f.Fuzz(func(t *testing.T, out []byte) {
		e := &Handler{cfg: Config{MaxLine: 64}, log: slog.New(slog.DiscardHandler)}
		c := &child{e: e, ready: make(chan struct{})}
		done := make(chan answer, 1)
		cl := &call{id: "t1", done: done, report: func(kind string, data json.RawMessage) {
			if len(done) > 0 {
				t.Fatalf("%s report after the answer", kind)
			}
			if kind != task.KindProgress && kind != task.KindPartial {
				t.Fatalf("report of kind %q", kind)
			}
			if !json.Valid(data) {
				t.Fatalf("%s report %q is not JSON", kind, data)
			}
		}}
		c.cur = cl
		// done holds one answer: a second one would block finish, a hang
		// the fuzzer reports.
		c.readStdout(bytes.NewReader(out))
		if e.asked < 0 {
			t.Fatalf("concurrency %d asked", e.asked)
		}
		select {
		case a := <-done:
			if c.current() != nil {
				t.Fatal("the call is still current after its answer")
			}
			if a.err == nil && !json.Valid(a.result) {
				t.Fatalf("result %q is not JSON", a.result)
			}
			if a.err != nil && a.err.Error() == "" {
				t.Fatal("an answer with an empty error")
			}
			if errors.Is(a.err, ErrLineTooLong) && !errors.Is(a.err, task.ErrSkipRetry) {
				t.Fatalf("a line over the limit fails for good: %v", a.err)
			}
		default:
		}
	})
}
