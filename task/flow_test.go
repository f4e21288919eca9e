package task_test

import (
	"context"
	"encoding/json"
	"errors"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/leatdev/leat/app"
	"github.com/leatdev/leat/internal/tools/redistest"
	"github.com/leatdev/leat/task"
)

// echo returns its payload followed by its parents' results, sorted:
// "D(b=B(a=A()),c=C(a=A()))".
func echo(ctx context.Context, tk *task.Task[string]) (string, error) {
	var parts []string
	for name, p := range tk.Parents {
		var s string
		if p.State == task.Succeeded {
			if err := json.Unmarshal(p.Result, &s); err != nil {
				return "", err
			}
		} else {
			s = string(p.State) + ":" + p.Error
		}
		parts = append(parts, name+"="+s)
	}
	sort.Strings(parts)
	return tk.Payload + "(" + strings.Join(parts, ",") + ")", nil
}

// parentTask returns the task ID of node parent in the flow of task id.
func parentTask(id, parent string) string { return id[:strings.LastIndexByte(id, ':')+1] + parent }

// diamond adds a -> b, c -> d to f: a and d on q1, b and c on q2.
func diamond(f *task.Flow, q1, q2 *task.Queue[string, string]) {
	a := task.AddNode(f, "a", q1, "A")
	b := task.AddNode(f, "b", q2, "B").After(a)
	c := task.AddNode(f, "c", q2, "C").After(a)
	f.Chord([]*task.Node{b, c}, task.AddNode(f, "d", q1, "D"))
}

const diamondResult = `"D(b=B(a=A()),c=C(a=A()))"`

// TestFlowDiamond: a diamond across two queues runs each node once, after
// its parents, and d's handler sees what b and c returned; the flow's
// result is its sink's.
func TestFlowDiamond(t *testing.T) {
	e := newEnv(t)
	ctx := ctxT(t)
	a := e.app("w1")
	q1, err := task.Handle(a, "fq1", echo)
	if err != nil {
		t.Fatal(err)
	}
	q2, err := task.Handle(a, "fq2", echo)
	if err != nil {
		t.Fatal(err)
	}
	e.run(a)
	f := task.NewFlow(a)
	diamond(f, q1, q2)
	id, err := f.Submit(ctx)
	if err != nil {
		t.Fatal(err)
	}
	info, err := task.WaitFlow(ctx, a, id)
	if err != nil {
		t.Fatal(err)
	}
	if info.State != task.FlowSucceeded || len(info.Results) != 1 || string(info.Results["d"]) != diamondResult {
		t.Fatalf("flow %s, results %s", info.State, info.Results)
	}
	names := []string{}
	for _, n := range info.Nodes {
		names = append(names, n.Name)
		if n.State != task.Succeeded {
			t.Fatalf("node %s is %s", n.Name, n.State)
		}
	}
	if strings.Join(names, ",") != "a,b,c,d" {
		t.Fatalf("nodes in order %v", names)
	}
	if ti, err := q2.Info(ctx, task.FlowTaskID(id, "b")); err != nil || string(ti.Result) != `"B(a=A())"` {
		t.Fatalf("b's task: %+v %v", ti, err)
	}
	list, err := task.ListFlows(ctx, a, task.FlowSucceeded, 0)
	if err != nil || len(list) != 1 || list[0].ID != id || list[0].Nodes != 4 || list[0].Left != 0 {
		t.Fatalf("listing %+v %v", list, err)
	}
	if _, err := f.Submit(ctx); err != nil {
		t.Fatalf("a flow submitted again gets a new ID: %v", err)
	}
}

// TestFlowNeverEarly: a node starts only when all its parents succeeded,
// even when a parent fails twice before it succeeds; each node runs once
// after its parents' success.
func TestFlowNeverEarly(t *testing.T) {
	e := newEnv(t)
	ctx := ctxT(t)
	a := e.app("w1")
	var mu sync.Mutex
	tries := map[string]int{}
	var early []string
	var q *task.Queue[string, string]
	handler := func(ctx context.Context, tk *task.Task[string]) (string, error) {
		for _, p := range strings.Split(tk.Payload, ",") {
			if p == "" {
				continue
			}
			in, err := q.Info(ctx, parentTask(tk.ID, p))
			if err != nil || in.State != task.Succeeded {
				mu.Lock()
				early = append(early, tk.ID+" before "+p)
				mu.Unlock()
			}
		}
		mu.Lock()
		tries[tk.ID]++
		n := tries[tk.ID]
		mu.Unlock()
		if strings.HasSuffix(tk.ID, ":a") && n <= 2 {
			return "", errors.New("not yet")
		}
		return "ok", nil
	}
	q, err := task.Handle(a, "early", handler, task.Backoff(10*time.Millisecond, 20*time.Millisecond), task.Concurrency(8))
	if err != nil {
		t.Fatal(err)
	}
	e.run(a)
	f := task.NewFlow(a)
	na := task.AddNode(f, "a", q, "")
	nx := task.AddNode(f, "x", q, "")
	nb := task.AddNode(f, "b", q, "a,x").After(na, nx)
	task.AddNode(f, "c", q, "b,x").After(nb, nx)
	id, err := f.Submit(ctx)
	if err != nil {
		t.Fatal(err)
	}
	info, err := task.WaitFlow(ctx, a, id)
	if err != nil || info.State != task.FlowSucceeded {
		t.Fatalf("flow %+v %v", info, err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(early) > 0 {
		t.Fatalf("nodes started before their parents succeeded: %v", early)
	}
	want := map[string]int{"a": 3, "x": 1, "b": 1, "c": 1}
	for n, w := range want {
		if got := tries[task.FlowTaskID(id, n)]; got != w {
			t.Fatalf("node %s ran %d times, want %d", n, got, w)
		}
	}
}

// TestFlowFailurePolicies: a node that fails (here with SkipRetry) fails
// its flow (nodes not started cancelled, a running one stopped), or its
// children run without it (ignore) or with its failure (continue).
func TestFlowFailurePolicies(t *testing.T) {
	for _, tc := range []struct {
		policy task.FailurePolicy
		flow   task.FlowState
		child  string // b's state or result
	}{
		{task.FailFlow, task.FlowFailed, "cancelled"},
		{task.IgnoreFailure, task.FlowSucceeded, `"B(x=X())"`},
		{task.ContinueOnFailure, task.FlowSucceeded, `"B(a=failed:leat: skip retry: bad input,x=X())"`},
	} {
		t.Run(string(tc.policy), func(t *testing.T) {
			e := newEnv(t)
			ctx := ctxT(t)
			a := e.app("w1")
			var slowStopped atomic.Bool
			handler := func(ctx context.Context, tk *task.Task[string]) (string, error) {
				switch tk.Payload {
				case "FAIL":
					return "", task.SkipRetry(errors.New("bad input"))
				case "SLOW":
					if tc.policy != task.FailFlow {
						return "slow", nil
					}
					<-ctx.Done()
					slowStopped.Store(errors.Is(context.Cause(ctx), task.ErrCancelled))
					return "", ctx.Err()
				}
				return echo(ctx, tk)
			}
			q, err := task.Handle(a, "pol", handler, task.Concurrency(4))
			if err != nil {
				t.Fatal(err)
			}
			e.run(a)
			f := task.NewFlow(a)
			slow := task.AddNode(f, "slow", q, "SLOW")
			x := task.AddNode(f, "x", q, "X")
			na := task.AddNode(f, "a", q, "FAIL").After(x).OnFailure(tc.policy)
			task.AddNode(f, "b", q, "B").After(na, x)
			task.AddNode(f, "tail", q, "T").After(slow)
			id, err := f.Submit(ctx)
			if err != nil {
				t.Fatal(err)
			}
			info, err := task.WaitFlow(ctx, a, id)
			if err != nil {
				t.Fatal(err)
			}
			if info.State != tc.flow {
				t.Fatalf("flow %s, want %s", info.State, tc.flow)
			}
			nodes := map[string]task.FlowNodeInfo{}
			for _, n := range info.Nodes {
				nodes[n.Name] = n
			}
			if nodes["a"].State != task.Failed || !strings.HasSuffix(nodes["a"].Error, "bad input") {
				t.Fatalf("a: %+v", nodes["a"])
			}
			if tc.policy == task.FailFlow {
				if info.FailedBy != "a" || nodes["b"].State != task.Cancelled || nodes["tail"].State != task.Cancelled {
					t.Fatalf("failed by %q, b %s, tail %s", info.FailedBy, nodes["b"].State, nodes["tail"].State)
				}
				// the running node was asked to stop, and ends cancelled
				redistest.Eventually(t, 10*time.Second, "the running node cancelled", func() bool {
					in, err := q.Info(ctx, task.FlowTaskID(id, "slow"))
					return err == nil && in.State == task.Cancelled && slowStopped.Load()
				})
				redistest.Eventually(t, 10*time.Second, "no task left waiting", func() bool {
					c, err := q.Counts(ctx)
					return err == nil && c[task.Waiting] == 0 && c[task.Pending] == 0 && c[task.Active] == 0
				})
				return
			}
			if string(nodes["b"].Result) != tc.child || len(info.Results) != 2 {
				t.Fatalf("b: %+v, results %s", nodes["b"], info.Results)
			}
		})
	}
}

// TestFlowCancel: cancelling a flow cancels its nodes not started and
// stops its running ones; the flow ends cancelled, once.
func TestFlowCancel(t *testing.T) {
	e := newEnv(t)
	ctx := ctxT(t)
	a := e.app("w1")
	started := make(chan struct{}, 1)
	q, err := task.Handle(a, "cq", func(ctx context.Context, tk *task.Task[string]) (string, error) {
		started <- struct{}{}
		<-ctx.Done()
		return "", ctx.Err()
	})
	if err != nil {
		t.Fatal(err)
	}
	e.run(a)
	f := task.NewFlow(a)
	task.AddNode(f, "after", q, "").After(task.AddNode(f, "first", q, ""))
	id, err := f.Submit(ctx)
	if err != nil {
		t.Fatal(err)
	}
	<-started
	if err := task.CancelFlow(ctx, a, id); err != nil {
		t.Fatal(err)
	}
	if err := task.CancelFlow(ctx, a, id); !errors.Is(err, task.ErrFinished) {
		t.Fatalf("cancel twice: %v", err)
	}
	redistest.Eventually(t, 10*time.Second, "the nodes cancelled", func() bool {
		in, err := task.GetFlow(ctx, a, id)
		if err != nil || in.State != task.FlowCancelled {
			return false
		}
		for _, n := range in.Nodes {
			if n.State != task.Cancelled {
				return false
			}
		}
		return true
	})
	if err := task.CancelFlow(ctx, a, "nope"); !errors.Is(err, task.ErrNotFound) {
		t.Fatalf("cancel unknown: %v", err)
	}
}

// TestFlowInvalid: a flow with bad input is refused whole and writes
// nothing.
func TestFlowInvalid(t *testing.T) {
	e := newEnv(t)
	ctx := ctxT(t)
	a := e.app("w1")
	q, err := task.Declare[string, string](a, "inv")
	if err != nil {
		t.Fatal(err)
	}
	other, err := app.New(app.Config{Name: "other", Client: e.client, KeyPrefix: e.prefix})
	if err != nil {
		t.Fatal(err)
	}
	oq, err := task.Declare[string, string](other, "inv")
	if err != nil {
		t.Fatal(err)
	}
	for name, build := range map[string]func(f *task.Flow){
		"empty": func(f *task.Flow) {},
		"cycle": func(f *task.Flow) {
			x := task.AddNode(f, "x", q, "")
			y := task.AddNode(f, "y", q, "").After(x)
			x.After(y)
		},
		"name":      func(f *task.Flow) { task.AddNode(f, "a:b", q, "") },
		"twice":     func(f *task.Flow) { task.AddNode(f, "a", q, ""); task.AddNode(f, "a", q, "") },
		"delay":     func(f *task.Flow) { task.AddNode(f, "a", q, "", task.Delay(time.Second)) },
		"unique":    func(f *task.Flow) { task.AddNode(f, "a", q, "", task.Unique(time.Second)) },
		"id":        func(f *task.Flow) { task.AddNode(f, "a", q, "", task.ID("x")) },
		"policy":    func(f *task.Flow) { task.AddNode(f, "a", q, "").OnFailure("maybe") },
		"priority":  func(f *task.Flow) { task.AddNode(f, "a", q, "", task.Priority("nope")) },
		"other app": func(f *task.Flow) { task.AddNode(f, "a", oq, "") },
		"payload":   func(f *task.Flow) { task.AddNode(f, "a", q, "\xff") },
		"flow id":   func(f *task.Flow) { task.AddNode(f, "a", q, "") },
	} {
		opts := []task.FlowOption{}
		if name == "flow id" {
			opts = append(opts, task.FlowID("a:b"))
		}
		f := task.NewFlow(a, opts...)
		build(f)
		if _, err := f.Submit(ctx); !errors.Is(err, task.ErrInvalidFlow) {
			t.Errorf("%s: %v", name, err)
		}
	}
	if _, err := q.Enqueue(ctx, "x", task.ID("flow:x:y")); !errors.Is(err, task.ErrInvalid) {
		t.Fatalf("a flow node's ID enqueued: %v", err)
	}
	list, err := task.ListFlows(ctx, a, "", 0)
	if err != nil || len(list) != 0 {
		t.Fatalf("flows written: %v %v", list, err)
	}
	counts, err := q.Counts(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for st, n := range counts {
		if n != 0 {
			t.Fatalf("%d tasks %s written", n, st)
		}
	}
}

func jsonUnmarshal(b []byte, v any) error { return json.Unmarshal(b, v) }
