package task_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/leatdev/leat/task"
)

// TestReservedIDs: task IDs of the cron namespace are the scheduler's: an
// enqueue that names one is refused before anything is written, so no
// client can enqueue a schedule's ticks ahead of it.
func TestReservedIDs(t *testing.T) {
	e := newEnv(t)
	ctx := ctxT(t)
	a := e.app("w1")
	q, err := task.Handle(a, "reserved", func(ctx context.Context, tk *task.Task[int]) (int, error) {
		return tk.Payload, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"cron:nightly:1798761600000", "cron:x", "cron:"} {
		_, err := q.Enqueue(ctx, 1, task.ID(id))
		if !errors.Is(err, task.ErrInvalid) || !strings.Contains(err.Error(), "reserved") {
			t.Errorf("ID %q: %v, want a refusal naming the reserved namespace", id, err)
		}
		if _, err := q.Info(ctx, id); !errors.Is(err, task.ErrNotFound) {
			t.Errorf("ID %q: Info: %v, want ErrNotFound", id, err)
		}
	}
	// An ID that only contains the word is the caller's.
	if _, err := q.Enqueue(ctx, 1, task.ID("nightly-cron:1")); err != nil {
		t.Fatal(err)
	}
}
