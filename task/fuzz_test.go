package task

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"
)

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
