package task_test

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/leatdev/leat/task"
)

// TestCronRefusesBadSchedules: a queue's cron schedule that would tick
// every second for a zero or negative interval, or never (30 February), is
// refused at registration with the reason.
func TestCronRefusesBadSchedules(t *testing.T) {
	e := newEnv(t)
	a := e.app("w1")
	q, err := task.Handle(a, "crons", func(ctx context.Context, tk *task.Task[int]) (int, error) { return 0, nil })
	if err != nil {
		t.Fatal(err)
	}
	for spec, want := range map[string]string{
		"@every 0s":  "at least 1s",
		"@every -1s": "at least 1s",
		"0 0 30 2 *": "matches no time",
	} {
		if err := q.Cron("bad", spec, 1); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("cron %q: %v, want an error with %q", spec, err, want)
		}
	}
	if err := q.Cron("ok", "@every 2s", 1); err != nil {
		t.Fatal(err)
	}
}

// TestSettingsRefusedOutOfRange: retention, retries and timeouts past
// their bounds are refused with the reason, on the queue and on one task,
// and the bounds themselves are taken.
func TestSettingsRefusedOutOfRange(t *testing.T) {
	e := newEnv(t)
	ctx := ctxT(t)
	a := e.app("w1")
	handler := func(ctx context.Context, tk *task.Task[int]) (int, error) { return 0, nil }
	for name, opt := range map[string]task.Option{
		"retention": task.Retention(292 * 365 * 24 * time.Hour),
		"retries":   task.MaxRetries(math.MaxInt64),
		"timeout":   task.Timeout(100 * 365 * 24 * time.Hour),
	} {
		if _, err := task.Handle(a, "q-"+name, handler, opt); err == nil || !strings.Contains(err.Error(), "out of range") {
			t.Errorf("queue %s: %v, want out of range", name, err)
		}
	}
	q, err := task.Handle(a, "ranges", handler,
		task.Retention(task.MaxRetentionLimit), task.MaxRetries(task.MaxRetriesLimit), task.Timeout(task.MaxTimeoutLimit))
	if err != nil {
		t.Fatal(err)
	}
	for name, opt := range map[string]task.EnqueueOption{
		"retention": task.WithRetention(292 * 365 * 24 * time.Hour),
		"retries":   task.WithMaxRetries(math.MaxInt64),
		"timeout":   task.WithTimeout(math.MaxInt64),
	} {
		if _, err := q.Enqueue(ctx, 1, opt); !errors.Is(err, task.ErrInvalid) || !strings.Contains(err.Error(), "out of range") {
			t.Errorf("task %s: %v, want ErrInvalid, out of range", name, err)
		}
	}
	if _, err := q.Enqueue(ctx, 1, task.WithRetention(task.MaxRetentionLimit), task.WithMaxRetries(task.MaxRetriesLimit),
		task.WithTimeout(task.MaxTimeoutLimit)); err != nil {
		t.Fatal(err)
	}
}
