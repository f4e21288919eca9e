package task_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/leatdev/leat/app"
	"github.com/leatdev/leat/internal/tools/redistest"
	"github.com/leatdev/leat/task"
)

// TestFlowCluster: on Redis Cluster a flow's record and each of its
// queues live in slots of their own, spread over the masters; a diamond
// runs whole and d sees what b and c returned.
func TestFlowCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("cluster test")
	}
	t.Parallel()
	cl := redistest.StartCluster(t, 3)
	ctx := ctxT(t)
	c := cl.Client(t)
	a, err := app.New(app.Config{Name: "shop", Client: c, Logger: testLogger(), LeaderLease: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	var queues []*task.Queue[string, string]
	handler := func(ctx context.Context, tk *task.Task[string]) (string, error) {
		if tk.Payload == "FAIL" {
			return "", task.SkipRetry(errors.New("bad input"))
		}
		return echo(ctx, tk)
	}
	for _, name := range []string{"cq1", "cq2", "cq3"} {
		q, err := task.Handle(a, name, handler)
		if err != nil {
			t.Fatal(err)
		}
		queues = append(queues, q)
	}
	done := make(chan error, 1)
	wctx, stop := context.WithCancel(ctx)
	go func() { done <- a.Run(wctx) }()
	defer func() { stop(); <-done }()
	f := task.NewFlow(a)
	na := task.AddNode(f, "a", queues[0], "A")
	nb := task.AddNode(f, "b", queues[1], "B").After(na)
	nc := task.AddNode(f, "c", queues[2], "C").After(na)
	f.Chord([]*task.Node{nb, nc}, task.AddNode(f, "d", queues[0], "D"))
	id, err := f.Submit(ctx)
	if err != nil {
		t.Fatal(err)
	}
	info, err := task.WaitFlow(ctx, a, id)
	if err != nil || info.State != task.FlowSucceeded || string(info.Results["d"]) != diamondResult {
		t.Fatalf("flow %+v %v", info, err)
	}
	// a node failing its flow cancels the nodes of other slots
	g := task.NewFlow(a)
	bad := task.AddNode(g, "bad", queues[1], "FAIL")
	task.AddNode(g, "never", queues[2], "N").After(bad)
	task.AddNode(g, "nor", queues[0], "N").After(bad)
	gid, err := g.Submit(ctx)
	if err != nil {
		t.Fatal(err)
	}
	info, err = task.WaitFlow(ctx, a, gid)
	if err != nil || info.State != task.FlowFailed || info.FailedBy != "bad" {
		t.Fatalf("failing flow %+v %v", info, err)
	}
	for _, n := range info.Nodes {
		if n.Name != "bad" && n.State != task.Cancelled {
			t.Fatalf("node %s is %s", n.Name, n.State)
		}
	}
	redistest.Eventually(t, 10*time.Second, "the nodes' tasks cancelled in their queues", func() bool {
		for i, n := range []string{"never", "nor"} {
			in, err := queues[2-2*i].Info(ctx, task.FlowTaskID(gid, n))
			if err != nil || in.State != task.Cancelled {
				return false
			}
		}
		return true
	})
}
