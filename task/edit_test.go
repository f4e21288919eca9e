package task_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/leatdev/leat/internal/tools/redistest"
	"github.com/leatdev/leat/task"
)

// TestEditWaitingTasks: RunNow, Reschedule, SetPriority and SetPayload
// change tasks that wait to run, keep the counts exact, and refuse tasks
// that run, have ended or are missing, and keyed tasks in their key's line.
func TestEditWaitingTasks(t *testing.T) {
	e := newEnv(t)
	ctx := ctxT(t)
	release := make(chan struct{})
	a := e.app("w1")
	q, err := task.Handle(a, "edits", func(ctx context.Context, tk *task.Task[int]) (int, error) {
		if tk.Payload == 0 {
			select {
			case <-release:
			case <-ctx.Done():
			}
		}
		return 2 * tk.Payload, nil
	}, task.Priorities("high", "low"), task.Concurrency(1))
	if err != nil {
		t.Fatal(err)
	}
	k, err := task.Handle(a, "keyed-edits", func(ctx context.Context, tk *task.Task[int]) (int, error) { return tk.Payload, nil }, task.Keyed())
	if err != nil {
		t.Fatal(err)
	}
	e.run(a)
	blocker, _ := q.Enqueue(ctx, 0)
	redistest.Eventually(t, 20*time.Second, "the blocking task running", func() bool {
		in, err := q.Info(ctx, blocker)
		return err == nil && in.State == task.Active
	})
	state := func(id string) task.State {
		t.Helper()
		in, err := q.Info(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		return in.State
	}
	// The one slot is taken: what is enqueued now waits.
	delayed, _ := q.Enqueue(ctx, 1, task.Delay(time.Hour))
	waiting, _ := q.Enqueue(ctx, 2, task.Priority("low"))
	payload, _ := q.Enqueue(ctx, 3, task.Priority("low"))

	if err := q.RunNow(ctx, delayed); err != nil || state(delayed) != task.Pending {
		t.Fatalf("RunNow of a delayed task: %v, %s", err, state(delayed))
	}
	if err := q.Reschedule(ctx, waiting, time.Now().Add(time.Hour)); err != nil || state(waiting) != task.Scheduled {
		t.Fatalf("Reschedule of a pending task: %v, %s", err, state(waiting))
	}
	if c, err := q.Counts(ctx); err != nil || c[task.Scheduled] != 1 || c[task.Pending] != 2 || c[task.Active] != 1 {
		t.Fatalf("counts after the edits: %v %v", c, err)
	}
	if err := q.Reschedule(ctx, waiting, time.Now().Add(-time.Second)); err != nil || state(waiting) != task.Pending {
		t.Fatalf("Reschedule into the past: %v, %s", err, state(waiting))
	}
	if err := q.SetPriority(ctx, waiting, "high"); err != nil {
		t.Fatal(err)
	}
	if in, err := q.Info(ctx, waiting); err != nil || in.Priority != "high" {
		t.Fatalf("the task moved to high: %+v %v", in, err)
	}
	if err := q.SetPriority(ctx, waiting, "urgent"); err == nil {
		t.Fatal("SetPriority to an unknown level accepted")
	}
	if err := q.SetPayload(ctx, payload, 30); err != nil {
		t.Fatal(err)
	}
	if err := q.RunNow(ctx, blocker); !errors.Is(err, task.ErrFinished) {
		t.Fatalf("RunNow of a running task: %v, want ErrFinished", err)
	}
	if err := q.SetPayload(ctx, "missing", 1); !errors.Is(err, task.ErrNotFound) {
		t.Fatalf("SetPayload of a missing task: %v, want ErrNotFound", err)
	}
	close(release)
	for id, want := range map[string]string{delayed: "2", waiting: "4", payload: "60"} {
		in, err := q.Wait(ctx, id)
		if err != nil || in.State != task.Succeeded || string(in.Result) != want {
			t.Fatalf("task %s: %+v %v, want result %s", id, in, err, want)
		}
	}
	if err := q.SetPayload(ctx, payload, 1); !errors.Is(err, task.ErrFinished) {
		t.Fatalf("SetPayload of an ended task: %v, want ErrFinished", err)
	}

	// A flow's node waiting for its parents is not released by an edit (the
	// queue paused: the parent stays pending).
	if err := q.Pause(ctx); err != nil {
		t.Fatal(err)
	}
	f := task.NewFlow(a)
	parent := task.AddNode(f, "parent", q, 0)
	task.AddNode(f, "child", q, 1).After(parent)
	flowID, err := f.Submit(ctx)
	if err != nil {
		t.Fatal(err)
	}
	child := task.FlowIDPrefix + flowID + ":child"
	if err := q.RunNow(ctx, child); !errors.Is(err, task.ErrFinished) {
		t.Fatalf("RunNow of a flow's waiting node: %v, want ErrFinished", err)
	}

	// Keyed: a pending task keeps its key's line; a delayed one joins it
	// when run now.
	if err := k.Pause(ctx); err != nil {
		t.Fatal(err)
	}
	first, _ := k.Enqueue(ctx, 1, task.Key("a"))
	later, _ := k.Enqueue(ctx, 2, task.Key("a"), task.Delay(time.Hour))
	if err := k.Reschedule(ctx, first, time.Now().Add(time.Hour)); !errors.Is(err, task.ErrKeyedInLine) {
		t.Fatalf("Reschedule of a keyed pending task: %v, want ErrKeyedInLine", err)
	}
	if err := k.RunNow(ctx, later); err != nil {
		t.Fatal(err)
	}
	if err := k.Resume(ctx); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{first, later} {
		if in, err := k.Wait(ctx, id); err != nil || in.State != task.Succeeded {
			t.Fatalf("keyed task %s: %+v %v", id, in, err)
		}
	}
	if c, err := k.Counts(ctx); err != nil || c[task.Succeeded] != 2 || c[task.Scheduled]+c[task.Pending] != 0 {
		t.Fatalf("keyed counts: %v %v", c, err)
	}
}
