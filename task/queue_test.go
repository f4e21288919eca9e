package task_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/leatdev/leat/internal/tools/redistest"
	"github.com/leatdev/leat/task"
)

type job struct {
	N int `json:"n"`
}

type out struct {
	Double int `json:"double"`
}

// TestEnqueueRunResult: tasks enqueued one by one and in bulk run once each
// across two workers, their results are stored, and the counts per state
// follow.
func TestEnqueueRunResult(t *testing.T) {
	e := newEnv(t)
	ctx := ctxT(t)
	var mu sync.Mutex
	runs := map[int]int{}
	handler := func(ctx context.Context, tk *task.Task[job]) (out, error) {
		mu.Lock()
		runs[tk.Payload.N]++
		mu.Unlock()
		return out{Double: 2 * tk.Payload.N}, nil
	}
	var q *task.Queue[job, out]
	for _, id := range []string{"w1", "w2"} {
		a := e.app(id)
		var err error
		q, err = task.Handle(a, "double", handler, task.Concurrency(5))
		if err != nil {
			t.Fatal(err)
		}
		e.run(a)
	}
	id, err := q.Enqueue(ctx, job{N: 0})
	if err != nil {
		t.Fatal(err)
	}
	const n = 2000
	ps := make([]job, n-1)
	for i := range ps {
		ps[i] = job{N: i + 1}
	}
	ids, err := q.EnqueueMany(ctx, ps)
	if err != nil || len(ids) != n-1 {
		t.Fatal(len(ids), err)
	}
	r, err := q.Result(ctx, id)
	if err != nil || r.Double != 0 {
		t.Fatal(r, err)
	}
	r, err = q.Result(ctx, ids[41])
	if err != nil || r.Double != 84 {
		t.Fatal(r, err)
	}
	redistest.Eventually(t, 30*time.Second, "all tasks succeeded", func() bool {
		c, err := q.Counts(ctx)
		return err == nil && c[task.Succeeded] == n
	})
	mu.Lock()
	defer mu.Unlock()
	for i := 0; i < n; i++ {
		if runs[i] != 1 {
			t.Fatalf("task %d ran %d times", i, runs[i])
		}
	}
	in, err := q.Info(ctx, ids[0])
	if err != nil {
		t.Fatal(err)
	}
	if in.State != task.Succeeded || in.Attempts != 1 || in.Worker == "" || in.StartedAt.IsZero() ||
		in.FinishedAt.Before(in.StartedAt) || string(in.Result) != `{"double":2}` {
		t.Fatalf("info %+v", in)
	}
	c, _ := q.Counts(ctx)
	for _, s := range task.States {
		if s != task.Succeeded && c[s] != 0 {
			t.Fatalf("counts %v", c)
		}
	}
	if _, err := q.Info(ctx, "nope"); !errors.Is(err, task.ErrNotFound) {
		t.Fatal(err)
	}
}

// Raw JSON payloads are kept as given, so one a worker would decode with
// replacements is refused, with nothing of the call written: bytes that are
// not UTF-8, and an escaped lone surrogate (Go would decode either as
// U+FFFD, other languages fail or differ), and an object holding a name
// twice (decoders keep one of its values, or refuse the text). A surrogate
// pair is text.
func TestEnqueueRefusesLossyText(t *testing.T) {
	e := newEnv(t)
	ctx := ctxT(t)
	a := e.app("w1")
	q, err := task.Declare[json.RawMessage, json.RawMessage](a, "raw")
	if err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{`{"t":"\ud800"}`, `{"t":"a\udc00b"}`, "{\"t\":\"\xff\"}", `"\ud83d"`, `{"t":1,"t":2}`, `[{"a":{"t":1,"\u0074":2}}]`} {
		_, err := q.EnqueueMany(ctx, []json.RawMessage{json.RawMessage(`{"t":"fine"}`), json.RawMessage(bad)})
		if !errors.Is(err, task.ErrInvalid) || !strings.Contains(err.Error(), "payload 1") {
			t.Errorf("%q: %v, want ErrInvalid for payload 1", bad, err)
		}
	}
	if err := q.Cron("bad", "* * * * *", json.RawMessage(`{"t":"\udfff"}`)); err == nil || !strings.Contains(err.Error(), "surrogate") {
		t.Errorf("a cron schedule with a lone surrogate: %v", err)
	}
	if n := scanStates(t, e, "raw"); len(n) != 0 {
		t.Fatalf("tasks written: %v", n)
	}
	id, err := q.Enqueue(ctx, json.RawMessage(`{"t":"\ud83d\ude00 \u00e9"}`))
	if err != nil {
		t.Fatal(err)
	}
	in, err := q.Info(ctx, id)
	if err != nil || string(in.Payload) != `{"t":"\ud83d\ude00 \u00e9"}` {
		t.Fatalf("payload %s (%v), want it as given", in.Payload, err)
	}
	// A Go payload's string that is not UTF-8, which encoding/json would
	// send with U+FFFD in place of its bad bytes; a U+FFFD of the text is
	// text.
	strs, err := task.Declare[string, string](a, "strs")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := strs.Enqueue(ctx, "caf\xe9"); !errors.Is(err, task.ErrInvalid) || !strings.Contains(err.Error(), "not valid UTF-8") {
		t.Errorf("a string of Latin-1 bytes: %v, want ErrInvalid", err)
	}
	if id, err := strs.Enqueue(ctx, "a\uFFFDb"); err != nil {
		t.Fatal(err)
	} else if in, err := strs.Info(ctx, id); err != nil || string(in.Payload) != "\"a\uFFFDb\"" {
		t.Fatalf("payload %q (%v)", in.Payload, err)
	}
}

// A queue looked up from the registry (Lookup: the CLI's and the HTTP API's
// way) in a program that declared it with a payload type refuses, with
// nothing written, a payload that type's handlers would not decode
// exactly: an unknown field (encoding/json would drop it), a value of
// another kind or out of range. Looked up by another program, which knows
// only the registry, the queue refuses them by the schema recorded there.
func TestLookupChecksDeclaredPayload(t *testing.T) {
	e := newEnv(t)
	ctx := ctxT(t)
	a := e.app("w1")
	type sized struct {
		N     int      `json:"n"`
		Small uint8    `json:"small"`
		Tags  []string `json:"tags"`
		Inner struct {
			On bool `json:"on"`
		} `json:"inner"`
	}
	typed, err := task.Declare[sized, string](a, "sized")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := typed.Enqueue(ctx, sized{N: 1}); err != nil { // records the queue
		t.Fatal(err)
	}
	raw, err := task.Lookup(ctx, a, "sized")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ payload, says string }{
		{`{"n":1,"nn":2}`, `unknown field "nn"`},
		{`{"inner":{"on":true,"off":false}}`, `unknown field "off"`},
		{`{"n":1.5}`, `field "n": number 1.5 does not fit (want an integer from -9223372036854775808`},
		{`{"small":300}`, `field "small": number 300 does not fit (want an integer from 0 to 255)`},
		{`{"tags":"a"}`, `field "tags": string does not fit (want an array)`},
		{`{"inner":{"on":1}}`, `field "inner.on": number does not fit (want true or false)`},
		{`[1]`, `array does not fit the payload (want an object)`},
	} {
		_, err := raw.EnqueueMany(ctx, []json.RawMessage{json.RawMessage(`{"n":2}`), json.RawMessage(c.payload)})
		if !errors.Is(err, task.ErrInvalid) || !strings.Contains(err.Error(), "payload 1: "+c.says) {
			t.Errorf("%s: %v, want ErrInvalid saying %q", c.payload, err, c.says)
		}
	}
	if c, err := raw.Counts(ctx); err != nil || c[task.Pending] != 1 {
		t.Fatalf("counts %v (%v): a refused enqueue wrote tasks", c, err)
	}
	// Case-insensitive names and nulls decode as encoding/json decodes
	// them: accepted.
	if _, err := raw.Enqueue(ctx, json.RawMessage(`{"N":3,"tags":null,"inner":{"On":true}}`)); err != nil {
		t.Fatal(err)
	}
	other, err := task.Lookup(ctx, e.app("w2"), "sized")
	if err != nil {
		t.Fatal(err)
	}
	// A program that did not declare the queue checks by the schema the
	// declaring one recorded.
	if _, err := other.Enqueue(ctx, json.RawMessage(`{"n":1,"nn":2}`)); !errors.Is(err, task.ErrInvalid) || !strings.Contains(err.Error(), `unknown field "nn"; known: inner, n, small, tags`) {
		t.Fatalf("a program that did not declare the queue: %v, want the recorded schema's refusal", err)
	}
	if _, err := other.Enqueue(ctx, json.RawMessage(`{"n":1,"inner":{"on":true}}`)); err != nil {
		t.Fatalf("a program that did not declare the queue: %v", err)
	}
}
