package task_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/leatdev/leat/app"
	"github.com/leatdev/leat/internal/redistest"
	"github.com/leatdev/leat/task"
)

// A worker marks the tasks of entries its blocking read returned active in
// one script call. When that call's reply is lost (the connection broke,
// or the process stalled past the read timeout) go-redis sends it again:
// the second run finds the tasks already active for this worker and hands
// them out again, instead of acknowledging their entries as those of tasks
// no longer pending, which left each task active with no entry, never run
// and never reclaimed. The visibility timeout is long, so only that brings
// the task back within the test's deadline.
func TestFetchReplyLost(t *testing.T) {
	e := newEnv(t)
	ctx := ctxT(t)
	// The given-mode fetch call: "given" is its fourth argument.
	lose := &redistest.ReplyLoser{Match: []byte("$5\r\ngiven\r\n")}
	var arm atomic.Bool
	lose.Armed = func() bool { return arm.Load() && lose.Lost() < 1 }
	a, err := app.New(app.Config{Name: "shop", Client: lose.Client(t, e.client), KeyPrefix: e.prefix, WorkerID: "w1", Logger: testLogger()})
	if err != nil {
		t.Fatal(err)
	}
	var ran atomic.Int32
	q, err := task.Handle(a, "jobs", func(ctx context.Context, tk *task.Task[job]) (out, error) {
		ran.Add(1)
		return out{Double: 2 * tk.Payload.N}, nil
	}, task.Visibility(5*time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	e.run(a)
	// The worker blocks on the empty queue: the task comes through its
	// blocking read, then the given-mode call.
	first, err := q.Enqueue(ctx, job{N: 1})
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "the first task", func() bool { return ran.Load() == 1 })
	arm.Store(true)
	id, err := q.Enqueue(ctx, job{N: 2})
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, 20*time.Second, "the task whose fetch reply was lost", func() bool {
		info, err := q.Info(ctx, id)
		return err == nil && info.State == task.Succeeded
	})
	if lose.Lost() != 1 {
		t.Fatalf("%d fetch replies lost, want 1", lose.Lost())
	}
	if n := ran.Load(); n != 2 {
		t.Fatalf("%d runs, want 2 (%s and %s once each)", n, first, id)
	}
}
