package task_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

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
	eventually(t, 30*time.Second, "all tasks succeeded", func() bool {
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
