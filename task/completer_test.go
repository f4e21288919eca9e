package task_test

import (
	"context"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/leatdev/leat/app"
	"github.com/leatdev/leat/internal/tools/redistest"
	"github.com/leatdev/leat/task"
)

// outcomeLoser returns an App (worker w1) whose client loses the replies of
// the finish calls that record a success ("ok" is among their arguments)
// while armed says so: each such call runs, then its connection breaks.
// It logs to logs.
func outcomeLoser(t *testing.T, e *env, armed func() bool, logs *messages) (*app.App, *redistest.ReplyLoser) {
	t.Helper()
	lose := &redistest.ReplyLoser{Match: []byte("$2\r\nok\r\n"), Armed: armed}
	a, err := app.New(app.Config{Name: "shop", Client: lose.Client(t, e.client), KeyPrefix: e.prefix, WorkerID: "w1", Logger: slog.New(logs)})
	if err != nil {
		t.Fatal(err)
	}
	return a, lose
}

// A stretch of failing outcome calls while the outcomes' buffer is full
// holds up neither the worker nor its stop: handlers that finish wait for
// room without a lock that the fetchers, the toucher, the stop and the
// completer's retries need. (A handler waited for room holding the
// worker's lock, which the completer took on its sixth failure: every
// part of the worker stopped for good, and Run never returned.) Once the
// outcome calls succeed again every task is recorded, each run once (the
// visibility timeout is far off), and the worker stops.
func TestOutcomesAfterFailingStretchWithBufferFull(t *testing.T) {
	e := newEnv(t)
	ctx := ctxT(t)
	var healed atomic.Bool
	logs := &messages{}
	a, _ := outcomeLoser(t, e, func() bool { return !healed.Load() }, logs)
	runs := make([]atomic.Int32, 300)
	q, err := task.Handle(a, "jobs", func(ctx context.Context, tk *task.Task[job]) (out, error) {
		runs[tk.Payload.N].Add(1)
		return out{}, nil
	}, task.Concurrency(32), task.Visibility(5*time.Minute), task.OutcomeBuffer(4), task.RecordWait(10*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	stop := e.run(a)
	jobs := make([]job, len(runs))
	for i := range jobs {
		jobs[i] = job{N: i}
	}
	if _, err := q.EnqueueMany(ctx, jobs); err != nil {
		t.Fatal(err)
	}
	// the completer's seventh failed try (past its sixth, after which it
	// used to take the lock), while handlers that finished wait for room
	redistest.Eventually(t, 30*time.Second, "seven failed tries to record outcomes", func() bool {
		return logs.count("recording task outcomes failed") >= 7
	})
	healed.Store(true)
	redistest.Eventually(t, 30*time.Second, "every task recorded", func() bool {
		c, err := q.Counts(ctx)
		return err == nil && c[task.Succeeded] == int64(len(runs))
	})
	for i := range runs {
		if n := runs[i].Load(); n != 1 {
			t.Errorf("task %d ran %d times, want 1", i, n)
		}
	}
	stopped := make(chan error, 1)
	go func() { stopped <- stop() }()
	select {
	case err := <-stopped:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(40 * time.Second):
		t.Fatal("the worker did not stop")
	}
}

// A stop while the completer waits to record a failed batch again ends the
// wait: the worker stops long before the wait would have ended (ten
// minutes), after the quick tries a stopping worker gives its outcomes
// within its grace period (a second).
func TestStopDuringRecordBackoff(t *testing.T) {
	e := newEnv(t)
	ctx := ctxT(t)
	a, lose := outcomeLoser(t, e, nil, &messages{}) // every success's outcome call fails
	q, err := task.Handle(a, "jobs", func(ctx context.Context, tk *task.Task[job]) (out, error) {
		return out{}, nil
	}, task.Concurrency(1), task.Visibility(5*time.Minute), task.Grace(time.Second), task.RecordWait(10*time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	stop := e.run(a)
	if _, err := q.Enqueue(ctx, job{N: 1}); err != nil {
		t.Fatal(err)
	}
	redistest.Eventually(t, 30*time.Second, "the outcome call failed", func() bool { return lose.Lost() >= 1 })
	stopped := make(chan error, 1)
	go func() { stopped <- stop() }()
	select {
	case err := <-stopped:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(time.Minute):
		t.Fatal("the stop waited out the completer's wait")
	}
}
