package task_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/leatdev/leat/app"
	"github.com/leatdev/leat/internal/tools/redistest"
	"github.com/leatdev/leat/task"
	"github.com/redis/go-redis/v9"
)

// TestFlowLostReplies: the reply of a step between a parent's end and its
// child's release is lost (the link broke after Redis ran it; with the
// client's retries off, the worker gives up, as one killed there would):
// the child is released once, by the worker's retry or by the flows'
// sweep, and runs once.
func TestFlowLostReplies(t *testing.T) {
	for _, tc := range []struct {
		name    string
		match   string // what the lost command holds
		retries int    // the client's MaxRetries (-1: none)
	}{
		// the parent's outcome recorded in the flow, the reply lost
		{"flow step, retried", "$12\r\nlossy-parent\r\n$9\r\nsucceeded\r\n", 0},
		{"flow step, given up", "$12\r\nlossy-parent\r\n$9\r\nsucceeded\r\n", -1},
		// the child's release run, the reply lost
		{"release, given up", "flow:lost:kid", -1},
		// the parent's outcome recorded in its queue, the reply lost: the
		// completer's retry finds it recorded, and the flow is told by the
		// sweep
		{"finish, retried", "lossy-parent\r\n$1\r\n0\r\n", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			ctx := ctxT(t)
			lose := &redistest.ReplyLoser{Match: []byte(tc.match)}
			var arm atomic.Bool
			lose.Armed = func() bool { return arm.Load() && lose.Lost() < 1 }
			opt := *e.client.Options()
			opt.Dialer, opt.MaxRetries = lose.Dial, tc.retries
			c := redis.NewClient(&opt)
			t.Cleanup(func() { _ = c.Close() })
			a, err := app.New(app.Config{Name: "shop", Client: c, KeyPrefix: e.prefix, WorkerID: "w1", Logger: testLogger(), LeaderLease: time.Second})
			if err != nil {
				t.Fatal(err)
			}
			var kidRuns atomic.Int32
			q, err := task.Handle(a, "lq", func(ctx context.Context, tk *task.Task[string]) (string, error) {
				if tk.Payload == "KID" {
					kidRuns.Add(1)
					if _, ok := tk.Parents["lossy-parent"]; !ok {
						return "", task.SkipRetry(errors.New("no parent result"))
					}
				} else {
					arm.Store(true)
				}
				return tk.Payload, nil
			})
			if err != nil {
				t.Fatal(err)
			}
			e.run(a)
			f := task.NewFlow(a, task.FlowID("lost"))
			task.AddNode(f, "kid", q, "KID").After(task.AddNode(f, "lossy-parent", q, "P"))
			id, err := f.Submit(ctx)
			if err != nil {
				t.Fatal(err)
			}
			info, err := task.WaitFlow(ctx, a, id)
			if err != nil || info.State != task.FlowSucceeded {
				t.Fatalf("flow %+v %v", info, err)
			}
			// (two commands sent at once, the worker's and the sweep's, may
			// both lose theirs)
			if lose.Lost() < 1 {
				t.Fatal("no reply lost")
			}
			if n := kidRuns.Load(); n != 1 {
				t.Fatalf("the child ran %d times", n)
			}
		})
	}
}

// TestFlowHalfSubmitted: a producer that dies after writing the flow's
// record leaves it submitting; the sweep finishes the submission and the
// flow runs. Meanwhile it is in no listing.
func TestFlowHalfSubmitted(t *testing.T) {
	e := newEnv(t)
	ctx := ctxT(t)
	a := e.app("w1")
	q1, err := task.Handle(a, "hq1", echo)
	if err != nil {
		t.Fatal(err)
	}
	q2, err := task.Handle(a, "hq2", echo)
	if err != nil {
		t.Fatal(err)
	}
	f := task.NewFlow(a)
	diamond(f, q1, q2)
	id, err := f.SubmitRecordOnly(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if l, err := task.ListFlows(ctx, a, "", 0); err != nil || len(l) != 0 {
		t.Fatalf("a flow being submitted is listed: %v %v", l, err)
	}
	e.run(a)
	info, err := task.WaitFlow(ctx, a, id)
	if err != nil || info.State != task.FlowSucceeded || string(info.Results["d"]) != diamondResult {
		t.Fatalf("flow %+v %v", info, err)
	}
}

// TestFlowNodeEndedUnrecorded: a node's task that ends without its flow
// knowing (cancelled in its queue, or its worker killed between recording
// the outcome and telling the flow) is found by the sweep, and the flow
// moves on.
func TestFlowNodeEndedUnrecorded(t *testing.T) {
	e := newEnv(t)
	ctx := ctxT(t)
	a := e.app("w1")
	idle, err := task.Declare[string, string](a, "idleq") // no worker: its node stays pending
	if err != nil {
		t.Fatal(err)
	}
	q, err := task.Handle(a, "runq", echo)
	if err != nil {
		t.Fatal(err)
	}
	e.run(a)
	f := task.NewFlow(a)
	task.AddNode(f, "b", q, "B").After(task.AddNode(f, "a", idle, "A").OnFailure(task.IgnoreFailure))
	id, err := f.Submit(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := idle.Cancel(ctx, task.FlowTaskID(id, "a")); err != nil {
		t.Fatal(err)
	}
	info, err := task.WaitFlow(ctx, a, id)
	if err != nil || info.State != task.FlowSucceeded || string(info.Results["b"]) != `"B()"` {
		t.Fatalf("flow %+v %v", info, err)
	}
}

// TestFlowRetention: an ended flow's record is kept for its retention,
// then nothing of it is left: not its record, not its place in a listing.
func TestFlowRetention(t *testing.T) {
	e := newEnv(t)
	ctx := ctxT(t)
	a := e.app("w1")
	q, err := task.Handle(a, "rq", echo)
	if err != nil {
		t.Fatal(err)
	}
	e.run(a)
	f := task.NewFlow(a, task.FlowRetention(time.Second))
	task.AddNode(f, "only", q, "X")
	id, err := f.Submit(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := task.WaitFlow(ctx, a, id); err != nil {
		t.Fatal(err)
	}
	if l, err := task.ListFlows(ctx, a, "", 0); err != nil || len(l) != 1 {
		t.Fatalf("listing %v %v", l, err)
	}
	redistest.Eventually(t, 10*time.Second, "the flow forgotten", func() bool {
		_, err := task.GetFlow(ctx, a, id)
		l, lerr := task.ListFlows(ctx, a, "", 0)
		return errors.Is(err, task.ErrNotFound) && lerr == nil && len(l) == 0
	})
	redistest.Eventually(t, 10*time.Second, "the indexes emptied", func() bool {
		n, err := e.client.Exists(ctx, e.prefix+":flive:{shop}", e.prefix+":fdone:{shop}").Result()
		return err == nil && n == 0
	})
}

// TestFlowLarge: a flow of 10,000 nodes (a group and its callback) is
// submitted in one call and runs whole.
func TestFlowLarge(t *testing.T) {
	if testing.Short() {
		t.Skip("large flow")
	}
	e := newEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	a := e.app("w1")
	q, err := task.Handle(a, "big", func(ctx context.Context, tk *task.Task[int]) (int, error) {
		if tk.Payload >= 0 {
			return tk.Payload, nil
		}
		sum := 0
		for _, p := range tk.Parents {
			var n int
			if err := jsonUnmarshal(p.Result, &n); err != nil {
				return 0, err
			}
			sum += n
		}
		return sum, nil
	}, task.Concurrency(64))
	if err != nil {
		t.Fatal(err)
	}
	e.run(a)
	const n = 9_999
	f := task.NewFlow(a)
	group := make([]*task.Node, n)
	want := 0
	for i := range n {
		group[i] = task.AddNode(f, fmt.Sprintf("n%d", i), q, i)
		want += i
	}
	f.Chord(group, task.AddNode(f, "sum", q, -1))
	id, err := f.Submit(ctx)
	if err != nil {
		t.Fatal(err)
	}
	info, err := task.WaitFlow(ctx, a, id)
	if err != nil || info.State != task.FlowSucceeded || len(info.Nodes) != n+1 {
		t.Fatalf("flow %v %v", info.State, err)
	}
	if got := string(info.Results["sum"]); got != fmt.Sprint(want) {
		t.Fatalf("sum %s, want %d", got, want)
	}
}
