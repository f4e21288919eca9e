package task_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/leatdev/leat/internal/tools/redistest"
	"github.com/leatdev/leat/task"
)

// TestFlowAddChild: a node's handler maps over a list by adding a child
// per item at run time; the node waits for them, and its own child (the
// reduce step) starts only once they have all ended, seeing their results.
func TestFlowAddChild(t *testing.T) {
	e := newEnv(t)
	ctx := ctxT(t)
	a := e.app("w1")
	var squares *task.Queue[int, int]
	var mapped, reducedEarly atomic.Int32
	release := make(chan struct{})
	squares, err := task.Handle(a, "squares", func(ctx context.Context, tk *task.Task[int]) (int, error) {
		<-release
		mapped.Add(1)
		return tk.Payload * tk.Payload, nil
	}, task.Concurrency(8))
	if err != nil {
		t.Fatal(err)
	}
	steps, err := task.Handle(a, "steps", func(ctx context.Context, tk *task.Task[string]) (int, error) {
		switch tk.Payload {
		case "split":
			for i := range 5 {
				// added twice: the second adds nothing
				for range 2 {
					if err := task.AddChild(ctx, squares, fmt.Sprintf("sq-%d", i), i, ""); err != nil {
						return 0, err
					}
				}
			}
			if err := task.AddChild(ctx, squares, "split", 1, ""); err == nil {
				return 0, errors.New("a child named as an existing node was added")
			}
			return 5, nil
		case "sum":
			if mapped.Load() != 5 {
				reducedEarly.Add(1)
			}
			sum := 0
			for name, p := range tk.Parents {
				if strings.HasPrefix(name, "sq-") {
					var n int
					if err := jsonUnmarshal(p.Result, &n); err != nil {
						return 0, err
					}
					sum += n
				}
			}
			return sum, nil
		}
		return 0, task.AddChild(ctx, squares, "x", 1, "")
	})
	if err != nil {
		t.Fatal(err)
	}
	e.run(a)
	f := task.NewFlow(a)
	task.AddNode(f, "sum", steps, "sum").After(task.AddNode(f, "split", steps, "split"))
	id, err := f.Submit(ctx)
	if err != nil {
		t.Fatal(err)
	}
	redistest.Eventually(t, 10*time.Second, "split waiting for its children", func() bool {
		in, err := task.GetFlow(ctx, a, id)
		return err == nil && len(in.Nodes) == 7 && in.Nodes[0].State == task.WaitingChildren
	})
	close(release)
	info, err := task.WaitFlow(ctx, a, id)
	if err != nil || info.State != task.FlowSucceeded {
		t.Fatalf("flow %+v %v", info, err)
	}
	if string(info.Results["sum"]) != "30" || len(info.Results) != 1 || reducedEarly.Load() != 0 {
		t.Fatalf("results %s, reduced early %d", info.Results, reducedEarly.Load())
	}
	for _, n := range info.Nodes {
		if strings.HasPrefix(n.Name, "sq-") && n.SpawnedBy != "split" {
			t.Fatalf("node %+v", n)
		}
	}
	// outside a flow node's handler
	if err := task.AddChild(ctx, squares, "x", 1, ""); !errors.Is(err, task.ErrNotFlowNode) {
		t.Fatalf("AddChild outside a node: %v", err)
	}
}

// TestFlowResume: a node that dies fails its flow and the nodes after it
// are cancelled; requeued, it succeeds and the flow resumes from it: the
// cancelled nodes run, once, and the flow succeeds.
func TestFlowResume(t *testing.T) {
	e := newEnv(t)
	ctx := ctxT(t)
	a := e.app("w1")
	var runs sync.Map // node -> *atomic.Int32
	var holds atomic.Int32
	q, err := task.Handle(a, "resq", func(ctx context.Context, tk *task.Task[string]) (string, error) {
		n, _ := runs.LoadOrStore(tk.ID, new(atomic.Int32))
		if n.(*atomic.Int32).Add(1) == 1 && tk.Payload == "A" {
			for holds.Load() == 0 { // fail while "hold" runs
				if ctx.Err() != nil {
					return "", ctx.Err()
				}
				time.Sleep(time.Millisecond)
			}
			return "", errors.New("down")
		}
		return echo(ctx, tk)
	}, task.MaxRetries(0))
	if err != nil {
		t.Fatal(err)
	}
	// one at a time: the first of "hold" and "behind" to start (roots
	// have no order) runs until the flow fails stops it, while the other is
	// pending (cancelled in its queue then); revived, both succeed
	var slowStarts atomic.Int32
	slow, err := task.Handle(a, "slowq", func(ctx context.Context, tk *task.Task[string]) (string, error) {
		if slowStarts.Add(1) == 1 {
			holds.Store(1)
			<-ctx.Done()
			return "", ctx.Err()
		}
		return tk.Payload, nil
	}, task.Concurrency(1))
	if err != nil {
		t.Fatal(err)
	}
	e.run(a)
	f := task.NewFlow(a)
	task.AddNode(f, "hold", slow, "HOLD")
	task.AddNode(f, "behind", slow, "BEHIND")
	na := task.AddNode(f, "a", q, "A")
	nb := task.AddNode(f, "b", q, "B").After(na)
	task.AddNode(f, "c", q, "C").After(nb, task.AddNode(f, "x", q, "X"))
	id, err := f.Submit(ctx)
	if err != nil {
		t.Fatal(err)
	}
	info, err := task.WaitFlow(ctx, a, id)
	if err != nil || info.State != task.FlowFailed || info.FailedBy != "a" {
		t.Fatalf("flow %+v %v", info, err)
	}
	redistest.Eventually(t, 30*time.Second, "the running and the pending node cancelled", func() bool {
		for _, n := range []string{"hold", "behind"} {
			in, err := slow.Info(ctx, task.FlowTaskID(id, n))
			if err != nil || in.State != task.Cancelled {
				return false
			}
		}
		return true
	})
	if err := q.Requeue(ctx, task.FlowTaskID(id, "a")); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		in, err := task.GetFlow(ctx, a, id)
		if err == nil && in.State == task.FlowSucceeded {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the flow did not resume: %+v %v", in, err)
		}
		time.Sleep(5 * time.Millisecond)
	}
	info, err = task.GetFlow(ctx, a, id)
	if err != nil || string(info.Results["c"]) != `"C(b=B(a=A()),x=X())"` {
		t.Fatalf("flow %+v %v", info, err)
	}
	for _, n := range []string{"a", "b", "c", "x"} {
		r, _ := runs.Load(task.FlowTaskID(id, n))
		want := int32(1)
		if n == "a" {
			want = 2
		}
		if r == nil || r.(*atomic.Int32).Load() != want {
			t.Fatalf("node %s ran %v times", n, r)
		}
	}
	if l, err := task.ListFlows(ctx, a, task.FlowSucceeded, 0); err != nil || len(l) != 1 {
		t.Fatalf("listing %v %v", l, err)
	}
	for _, q := range []interface {
		Counts(context.Context) (map[task.State]int64, error)
	}{q, slow} {
		c, err := q.Counts(ctx)
		if err != nil || c[task.Succeeded] == 0 || c[task.Cancelled] != 0 || c[task.Waiting] != 0 || c[task.Dead] != 0 {
			t.Fatalf("counts %v %v", c, err)
		}
	}
	in, err := slow.Info(ctx, task.FlowTaskID(id, "behind"))
	if err != nil || in.State != task.Succeeded {
		t.Fatalf("behind: %+v %v", in, err)
	}
}
