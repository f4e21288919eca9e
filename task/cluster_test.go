package task_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/leatdev/leat/app"
	"github.com/leatdev/leat/inspect"
	"github.com/leatdev/leat/internal/redistest"
	"github.com/leatdev/leat/task"
)

// TestCluster: on Redis Cluster every key of a queue shares its slot, so
// its scripts run; queues spread over the masters. Delayed, keyed and
// weighted queues run there.
func TestCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("cluster test")
	}
	t.Parallel()
	cl := redistest.StartCluster(t, 3)
	ctx := ctxT(t)
	a, err := app.New(app.Config{Name: "shop", Client: cl.Client(t), Logger: testLogger(), LeaderLease: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	double := func(ctx context.Context, tk *task.Task[job]) (out, error) { return out{Double: 2 * tk.Payload.N}, nil }
	var queues []*task.Queue[job, out]
	for i := range 4 {
		var opts []task.Option
		switch i {
		case 1:
			opts = append(opts, task.Keyed())
		case 2:
			opts = append(opts, task.Weighted(task.Level{Name: "a", Weight: 2}, task.Level{Name: "b", Weight: 1}))
		}
		q, err := task.Handle(a, fmt.Sprintf("q%d", i), double, opts...)
		if err != nil {
			t.Fatal(err)
		}
		queues = append(queues, q)
	}
	done := make(chan error, 1)
	wctx, stop := context.WithCancel(ctx)
	go func() { done <- a.Run(wctx) }()
	defer func() { stop(); <-done }()
	for i, q := range queues {
		var opts []task.EnqueueOption
		if i == 1 {
			opts = append(opts, task.Key("k"))
		}
		ids, err := q.EnqueueMany(ctx, []job{{N: 1}, {N: 2}, {N: 3}}, opts...)
		if err != nil {
			t.Fatal(err)
		}
		later, err := q.Enqueue(ctx, job{N: 4}, append(opts, task.Delay(100*time.Millisecond))...)
		if err != nil {
			t.Fatal(err)
		}
		for j, id := range append(ids, later) {
			if r, err := q.Result(ctx, id); err != nil || r.Double != 2*(j+1) {
				t.Fatalf("queue %d task %d: %v %v", i, j, r, err)
			}
		}
	}
	// The inspector reads every queue (each in its own slot) in one go.
	reports, err := inspect.New(cl.Client(t), "", "shop").Queues(ctx)
	if err != nil || len(reports) != 4 {
		t.Fatalf("inspect queues: %d, %v", len(reports), err)
	}
	for _, r := range reports {
		if r.Counts["succeeded"] != 4 || r.Throughput.LastMinute.Finished != 4 || r.OldestReadyAgeMS != nil {
			t.Errorf("queue %s: %+v", r.Name, r)
		}
	}
}
