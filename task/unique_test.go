package task_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/leatdev/leat/internal/tools/redistest"
	"github.com/leatdev/leat/task"
)

// TestUniqueAndIDs: a duplicate within the unique TTL, or of a chosen ID,
// returns the existing task's ID and ErrDuplicate; the lock ends with the
// task.
func TestUniqueAndIDs(t *testing.T) {
	e := newEnv(t)
	ctx := ctxT(t)
	q, err := task.Declare[job, out](e.app("producer"), "u")
	if err != nil {
		t.Fatal(err)
	}
	id1, err := q.Enqueue(ctx, job{N: 1}, task.Unique(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	id2, err := q.Enqueue(ctx, job{N: 1}, task.Unique(time.Hour))
	if !errors.Is(err, task.ErrDuplicate) || id2 != id1 {
		t.Fatal(id1, id2, err)
	}
	if id3, err := q.Enqueue(ctx, job{N: 2}, task.Unique(time.Hour)); err != nil || id3 == id1 {
		t.Fatal(id3, err)
	}
	k1, _ := q.Enqueue(ctx, job{N: 5}, task.UniqueKey("user-7", time.Hour))
	if k2, err := q.Enqueue(ctx, job{N: 6}, task.UniqueKey("user-7", time.Hour)); !errors.Is(err, task.ErrDuplicate) || k2 != k1 {
		t.Fatal(k1, k2, err)
	}
	if id, err := q.Enqueue(ctx, job{N: 3}, task.ID("order-42")); err != nil || id != "order-42" {
		t.Fatal(id, err)
	}
	if id, err := q.Enqueue(ctx, job{N: 4}, task.ID("order-42")); !errors.Is(err, task.ErrDuplicate) || id != "order-42" {
		t.Fatal(id, err)
	}
	// A short TTL ends by itself.
	s1, _ := q.Enqueue(ctx, job{N: 9}, task.Unique(50*time.Millisecond))
	redistest.Eventually(t, 5*time.Second, "unique TTL over", func() bool {
		s2, err := q.Enqueue(ctx, job{N: 9}, task.Unique(50*time.Millisecond))
		return err == nil && s2 != s1
	})
	// The lock ends when the task does.
	a := e.app("w1")
	w, err := task.Handle(a, "u", func(ctx context.Context, tk *task.Task[job]) (out, error) { return out{}, nil })
	if err != nil {
		t.Fatal(err)
	}
	e.run(a)
	if _, err := w.Wait(ctx, id1); err != nil {
		t.Fatal(err)
	}
	if id, err := q.Enqueue(ctx, job{N: 1}, task.Unique(time.Hour)); err != nil || id == id1 {
		t.Fatal(id, err)
	}
}

// TestEnqueueRefusesBadInput: bad options and payloads are refused with a
// clear error before anything is written.
func TestEnqueueRefusesBadInput(t *testing.T) {
	e := newEnv(t)
	ctx := ctxT(t)
	a := e.app("producer")
	q, _ := task.Declare[job, out](a, "plain", task.Priorities("high", "low"))
	k, _ := task.Declare[job, out](a, "keyed", task.Keyed())
	raw, _ := task.Declare[any, out](a, "raw")
	cases := []struct {
		name string
		err  error
		want string
	}{
		{"bad ID", errOf(q.Enqueue(ctx, job{}, task.ID("a b"))), "task ID"},
		{"negative delay", errOf(q.Enqueue(ctx, job{}, task.Delay(-time.Second))), "negative"},
		{"unknown priority", errOf(q.Enqueue(ctx, job{}, task.Priority("urgent"))), "unknown priority"},
		{"key on unkeyed", errOf(q.Enqueue(ctx, job{}, task.Key("k"))), "not keyed"},
		{"keyed without key", errOf(k.Enqueue(ctx, job{})), "needs a key"},
		{"payload", errOf(raw.Enqueue(ctx, func() {})), "payload"},
		{"ID for many", errOf2(q.EnqueueMany(ctx, []job{{}, {}}, task.ID("x"))), "one task"},
	}
	for _, c := range cases {
		if c.err == nil || !strings.Contains(c.err.Error(), c.want) {
			t.Errorf("%s: error %v, want one containing %q", c.name, c.err, c.want)
		}
	}
	for _, name := range []string{"plain", "keyed", "raw"} {
		if n := scanStates(t, e, name); len(n) != 0 {
			t.Errorf("queue %s has tasks %v", name, n)
		}
	}
	if _, err := task.Declare[job, out](a, "bad", task.Keyed(), task.Priorities("a", "b")); err == nil {
		t.Error("keyed queue with priorities accepted")
	}
	if _, err := task.Declare[job, out](a, "bad queue"); err == nil {
		t.Error("bad queue name accepted")
	}
}

func errOf(_ string, err error) error    { return err }
func errOf2(_ []string, err error) error { return err }
