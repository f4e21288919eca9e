package app_test

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/leatdev/leat/app"
	"github.com/leatdev/leat/internal/tools/redistest"
	"github.com/leatdev/leat/stream"
)

// queueService stands for a task queue's worker, as package task attaches.
type queueService struct{ name string }

func (q queueService) Name() string                  { return "task-" + q.name }
func (q queueService) TaskQueue() string             { return q.name }
func (q queueService) Run(ctx context.Context) error { <-ctx.Done(); return nil }

type plainService struct{}

func (plainService) Name() string                  { return "mailer" }
func (plainService) Run(ctx context.Context) error { <-ctx.Done(); return nil }

// The worker's start line names what it runs: its processors, the task
// queues and the other services.
func TestWorkerStartLineNamesWhatItRuns(t *testing.T) {
	t.Parallel()
	env := newEnv(t)
	var logs redistest.Buffer
	a, s := env.newApp(1, func(c *app.Config) {
		c.WorkerID = "w1"
		c.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	})
	if err := app.Process(a, s, "count", func(ctx context.Context, events *stream.Events[event]) error {
		for range events.All() {
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	for _, svc := range []app.Service{queueService{"greet"}, queueService{"mail"}, plainService{}} {
		if err := a.Attach(svc); err != nil {
			t.Fatal(err)
		}
	}
	w := startWorker(t, a)
	redistest.Eventually(t, 10*time.Second, "the start line", func() bool {
		return strings.Contains(logs.String(), "worker started")
	})
	if err := w.stop(t); err != nil {
		t.Fatal(err)
	}
	line := ""
	for _, l := range strings.Split(logs.String(), "\n") {
		if strings.Contains(l, "worker started") {
			line = l
		}
	}
	for _, want := range []string{"worker=w1", "processors=events/count", "task_queues=greet,mail", "services=mailer"} {
		if !strings.Contains(line, want) {
			t.Errorf("start line %q does not say %s", line, want)
		}
	}
}
