package task_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/leatdev/leat/task"
)

// TestTaskLog: lines a Go handler logs are kept with the task, in order,
// capped in length; an unknown task has no log.
func TestTaskLog(t *testing.T) {
	e := newEnv(t)
	a := e.app("w1")
	q, err := task.Handle(a, "logs", func(ctx context.Context, tk *task.Task[int]) (int, error) {
		tk.Log("first")
		tk.Log(strings.Repeat("x", 2*task.LogLineMax))
		tk.Log("third")
		return tk.Payload, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	e.run(a)
	ctx := ctxT(t)
	id, err := q.Enqueue(ctx, 7)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := q.Result(ctx, id); err != nil {
		t.Fatal(err)
	}
	lines, err := q.Logs(ctx, id)
	if err != nil || len(lines) != 3 {
		t.Fatalf("%+v, %v", lines, err)
	}
	if lines[0].Line != "first" || len(lines[1].Line) != task.LogLineMax || lines[2].Line != "third" || lines[2].Attempt != 1 {
		t.Fatalf("%+v", lines)
	}
	if time.Since(lines[0].Time) > time.Minute {
		t.Fatalf("time %s", lines[0].Time)
	}
	if _, err := q.Logs(ctx, "nope"); !errors.Is(err, task.ErrNotFound) {
		t.Fatalf("unknown task: %v", err)
	}
}
