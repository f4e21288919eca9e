package task_test

import (
	"context"
	"strings"
	"testing"

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
