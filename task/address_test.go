package task_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/leatdev/leat/internal/tools/redistest"
	"github.com/leatdev/leat/task"
)

// TestDeclareRegistersOnRun: a queue a program only declares is in the
// registry once the program's worker runs, before any enqueue, so tools
// without its code find it; a queue looked up is not written back.
func TestDeclareRegistersOnRun(t *testing.T) {
	e := newEnv(t)
	ctx := ctxT(t)
	a := e.app("w1")
	if _, err := task.Declare[json.RawMessage, json.RawMessage](a, "declared", task.Priorities("premium", "standard"), task.MaxRetries(3), task.UniqueFor(task.DefaultRetention)); err != nil {
		t.Fatal(err)
	}
	tool := e.app("tool")
	if _, err := task.Lookup(ctx, tool, "declared"); !errors.Is(err, task.ErrUnknownQueue) {
		t.Fatalf("before the program ran: %v, want ErrUnknownQueue", err)
	}
	e.run(a)
	redistest.Eventually(t, 20*time.Second, "declared queue registered", func() bool {
		_, err := task.Lookup(ctx, tool, "declared")
		return err == nil
	})
	defs, err := task.Queues(ctx, tool)
	if err != nil || len(defs) != 1 {
		t.Fatalf("queues %+v, %v", defs, err)
	}
	if d := defs[0]; d.MaxRetries != 3 || d.UniqueTTL != task.DefaultRetention || len(d.Levels) != 2 {
		t.Fatalf("definition %+v", d)
	}
}

// TestUniqueFor: a queue's unique default applies to the enqueues of a tool
// that looked it up, and an enqueue's own Unique overrides it.
func TestUniqueFor(t *testing.T) {
	e := newEnv(t)
	ctx := ctxT(t)
	a := e.app("w1")
	q, err := task.Declare[json.RawMessage, json.RawMessage](a, "u", task.UniqueFor(task.DefaultRetention))
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Register(ctx); err != nil {
		t.Fatal(err)
	}
	raw, err := task.Lookup(ctx, e.app("tool"), "u")
	if err != nil {
		t.Fatal(err)
	}
	first, err := q.Enqueue(ctx, json.RawMessage(`{"n":1}`))
	if err != nil {
		t.Fatal(err)
	}
	again, err := raw.Enqueue(ctx, json.RawMessage(`{"n":1}`))
	if !errors.Is(err, task.ErrDuplicate) || again != first {
		t.Fatalf("same payload: %q, %v; want %q and ErrDuplicate", again, err, first)
	}
	if _, err := raw.Enqueue(ctx, json.RawMessage(`{"n":2}`)); err != nil {
		t.Fatalf("another payload: %v", err)
	}
	if _, err := task.Declare[json.RawMessage, json.RawMessage](a, "bad", task.UniqueFor(0)); err == nil {
		t.Fatal("UniqueFor(0) accepted")
	}
}

// TestLookupLevel: "queue.level" addresses a level of a queue, a bare
// queue its level named default, an unknown level is refused with the
// queue's levels, and a queue whose name has a dot is found whole.
func TestLookupLevel(t *testing.T) {
	e := newEnv(t)
	ctx := ctxT(t)
	a := e.app("w1")
	q, err := task.Declare[json.RawMessage, json.RawMessage](a, "inference", task.Priorities("premium", "default", "standard"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := task.Declare[json.RawMessage, json.RawMessage](a, "v1.jobs"); err != nil {
		t.Fatal(err)
	}
	if err := a.Register(ctx); err != nil {
		t.Fatal(err)
	}
	tool := e.app("tool")
	for _, c := range []struct{ address, queue, level, stored string }{
		{"inference", "inference", "", "default"},
		{"inference.premium", "inference", "premium", "premium"},
		{"inference.standard", "inference", "standard", "standard"},
		{"inference.default", "inference", "default", "default"},
		{"v1.jobs", "v1.jobs", "", ""},
	} {
		rq, level, err := task.LookupLevel(ctx, tool, c.address)
		if err != nil || rq.Name() != c.queue || level != c.level {
			t.Fatalf("%s: %v %q, %v", c.address, rq, level, err)
		}
		id, err := rq.Enqueue(ctx, json.RawMessage(`{}`), task.Priority(level))
		if err != nil {
			t.Fatal(err)
		}
		in, err := rq.Info(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if c.stored != "" && in.Priority != c.stored {
			t.Fatalf("%s: stored at %q, want %q", c.address, in.Priority, c.stored)
		}
	}
	id, err := q.Enqueue(ctx, json.RawMessage(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	if in, err := q.Info(ctx, id); err != nil || in.Priority != "default" {
		t.Fatalf("bare enqueue of the declaring program: %+v, %v", in, err)
	}
	_, _, err = task.LookupLevel(ctx, tool, "inference.gold")
	if !errors.Is(err, task.ErrUnknownLevel) || !strings.Contains(err.Error(), "premium, default, standard") {
		t.Fatalf("unknown level: %v", err)
	}
	for _, addr := range []string{"nothing", "nothing.premium", "inference."} {
		_, _, err = task.LookupLevel(ctx, tool, addr)
		if addr == "inference." {
			if !errors.Is(err, task.ErrUnknownLevel) {
				t.Fatalf("%s: %v", addr, err)
			}
			continue
		}
		if !errors.Is(err, task.ErrUnknownQueue) || !strings.Contains(err.Error(), addr) {
			t.Fatalf("%s: %v", addr, err)
		}
	}
}
