package task

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"
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
		e := &Exec{cfg: ExecConfig{MaxLine: 64}, log: slog.New(slog.DiscardHandler)}
		c := &child{e: e, ready: make(chan struct{})}
		done := make(chan answer, 1)
		cl := &call{id: "t1", done: done, report: func(kind string, data json.RawMessage) {
			if len(done) > 0 {
				t.Fatalf("%s report after the answer", kind)
			}
			if kind != KindProgress && kind != KindPartial {
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
			if errors.Is(a.err, ErrExecLineTooLong) && !errors.Is(a.err, ErrSkipRetry) {
				t.Fatalf("a line over the limit fails for good: %v", a.err)
			}
		default:
		}
	})
}

// FuzzQueueDefinition checks the queue registry's decoder: the definition a
// declaration records reads back to the same options, and any definition
// accepted gives settings a declaration could give (so a corrupt one is
// refused, not run with a zero timeout or no priority level).
func FuzzQueueDefinition(f *testing.F) {
	for _, opts := range [][]Option{
		nil,
		{Concurrency(3), Timeout(time.Minute), MaxRetries(0), Backoff(time.Millisecond, time.Second)},
		{Priorities("high", "low"), Retention(time.Hour), Visibility(time.Second), KeepDead(5, time.Minute)},
		{Weighted(Level{"a", 6}, Level{"b", 3}, Level{"c", 1})},
		{Keyed(), KeyRate(10, time.Second)},
		{Keyed(), KeyConcurrency(4), MaxKeyBacklog(100)},
	} {
		s, err := applyOptions(opts)
		if err != nil {
			f.Fatal(err)
		}
		b, err := json.Marshal((&core{name: "q", set: s}).Definition())
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte(`{"name":"q","levels":[],"strict":true,"timeout":0}`))
	f.Add([]byte(`{"name":"q","levels":[{"Name":"x","Weight":0}],"strict":false,"timeout":1000000000,"visibility":1}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		opts, err := definitionOptions(b)
		if err != nil {
			return
		}
		s, err := applyOptions(opts)
		if err != nil {
			if err.Error() == "" {
				t.Fatal("empty error")
			}
			return
		}
		switch {
		case s.concurrency < 1, s.timeout <= 0, s.maxRetries < 0, s.backoffMin <= 0, s.backoffMin > s.backoffMax,
			s.retention <= 0, s.visibility < 300*time.Millisecond, s.deadMax < 1, s.deadAge <= 0,
			len(s.levels) < 1, len(s.levels) > 10, s.keyed && len(s.levels) > 1, s.rate.N > 0 && !s.keyed,
			s.keyConc < 0, s.keyConc > MaxKeyConcurrencyLimit, s.keyBacklog < 0, s.keyBacklog > MaxKeyBacklogLimit,
			(s.keyConc > 1 || s.keyBacklog > 0) && !s.keyed:
			t.Fatalf("accepted %q as settings no declaration gives: %+v", b, s)
		}
		for _, l := range s.levels {
			if l.Name == "" || l.Weight < 1 {
				t.Fatalf("accepted %q with level %+v", b, l)
			}
		}
		def := (&core{name: "q", set: s}).Definition()
		again, err := json.Marshal(def)
		if err != nil {
			t.Fatal(err)
		}
		opts2, err := definitionOptions(again)
		if err != nil {
			t.Fatalf("re-read of %s: %v", again, err)
		}
		s2, err := applyOptions(opts2)
		if err != nil {
			t.Fatalf("re-read of %s: %v", again, err)
		}
		if def2 := (&core{name: "q", set: s2}).Definition(); !reflect.DeepEqual(def, def2) {
			t.Fatalf("round trip\n got %+v\nwant %+v", def2, def)
		}
	})
}

// FuzzTaskInfo checks the reader of a task's hash: any values give a status
// that encodes as JSON (the API and CLI serve it), or a clear error.
func FuzzTaskInfo(f *testing.F) {
	f.Add("succeeded", "1", "2", "1", `{"n":1}`, `{"done":3}`, `[1,2]`, "1763800000000", "boom", "https://h/x")
	f.Add("pending", "-1", "x", "99999999999999999999", "", "", "", "0", "", "")
	f.Add("active", "0", "0", "-1", "{", "nul", "\xff", "-5", "", "")
	f.Fuzz(func(t *testing.T, state, attempts, retries, level, payload, progress, result, ms, errMsg, hook string) {
		m := map[string]string{"s": state, "a": attempts, "r": retries, "l": level, "p": payload, "prog": progress,
			"res": result, "e": ms, "d": ms, "st": ms, "f": ms, "to": ms, "ret": ms, "err": errMsg, "wh": hook, "wha": attempts, "whd": ms}
		levels := []Level{{"high", 1}, {"low", 1}}
		in, err := infoOf("t1", "q", levels, m)
		if err != nil {
			if err.Error() == "" {
				t.Fatal("empty error")
			}
			return
		}
		if in.State != State(state) || in.Error != errMsg {
			t.Fatalf("read %+v from %q", in, m)
		}
		if in.Priority != "" && in.Priority != "high" && in.Priority != "low" {
			t.Fatalf("priority %q", in.Priority)
		}
		if _, err := json.Marshal(in); err != nil {
			t.Fatalf("status of %q does not encode: %v", m, err)
		}
	})
}

// FuzzFollowUpdate checks the reader of a task's updates stream: an update
// as a worker records it (kind, JSON value, attempt) reads back the same,
// and any other entry is an error, never an update that does not encode.
func FuzzFollowUpdate(f *testing.F) {
	f.Add("progress", []byte(`{"done":1,"of":3}`), "1")
	f.Add("partial", []byte(`"half"`), "2")
	f.Add("done", []byte(`1`), "1")
	f.Add("progress", []byte(`{`), "1")
	f.Add("progress", []byte(``), "")
	f.Fuzz(func(t *testing.T, kind string, data []byte, attempt string) {
		u, err := updateOf("t1", map[string]any{"k": kind, "d": string(data), "a": attempt})
		at, aerr := strconv.Atoi(attempt)
		valid := (kind == KindProgress || kind == KindPartial) && json.Valid(data) && aerr == nil && at >= 1
		if valid != (err == nil) {
			t.Fatalf("update %q %q %q: %+v, %v", kind, data, attempt, u, err)
		}
		if err != nil {
			return
		}
		if u.Kind != kind || !bytes.Equal(u.Data, data) || u.Attempt != at {
			t.Fatalf("update %q %q %q read as %+v", kind, data, attempt, u)
		}
		if _, err := json.Marshal(u); err != nil {
			t.Fatalf("update %+v does not encode: %v", u, err)
		}
	})
}

type reports []string

func (r *reports) report(_ context.Context, kind string, data json.RawMessage) error {
	*r = append(*r, kind+" "+string(data))
	return nil
}

// A handler's progress or partial result given as raw JSON is checked
// before it is recorded: what is not JSON is refused, so that the task's
// status and updates always encode.
func TestReportRefusesRawNonJSON(t *testing.T) {
	var got reports
	tk := &Task[int]{ID: "t1", rep: &got}
	if err := tk.Progress(json.RawMessage(`{"done":`)); err == nil || !strings.Contains(err.Error(), "is not JSON") {
		t.Fatalf("progress of broken JSON: %v", err)
	}
	if err := tk.Partial(json.RawMessage(`nope`)); err == nil {
		t.Fatal("partial of broken JSON accepted")
	}
	if err := tk.Progress(json.RawMessage(`{"done":1}`)); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(got) != `[progress {"done":1}]` {
		t.Fatalf("recorded %v", got)
	}
}
