package task_test

import (
	"bytes"
	"context"
	"errors"
	"net"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/leatdev/leat/app"
	"github.com/leatdev/leat/internal/tools/redistest"
	"github.com/leatdev/leat/task"
	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"
)

// noSweep makes the flows' sweep of the apps started after it run once
// at their start and then not for an hour, and check idle flows only after
// an hour: what moves a flow on within the test is the worker alone. The
// timings are the package's, so a test calling it runs alone (not
// parallel: parallel tests wait for it).
func noSweep(t *testing.T) {
	t.Cleanup(task.SetFlowTimings(time.Hour, time.Hour, time.Hour))
}

// flowStepRun is a flow of two nodes, "kid" after "lossy-parent", on one
// queue, run by a worker of client c: when each ran, and how often.
type flowStepRun struct {
	kidRuns    atomic.Int32
	parentRuns atomic.Int32
	parentDone atomic.Int64 // unix ns: the parent's handler returned
	kidStart   atomic.Int64 // unix ns: the kid's handler started
}

func runFlowStep(t *testing.T, c redis.UniversalClient, prefix string, armed *atomic.Bool) (*flowStepRun, *app.App, string) {
	t.Helper()
	ctx := ctxT(t)
	a, err := app.New(app.Config{Name: "shop", Client: c, KeyPrefix: prefix, WorkerID: "w1", Logger: testLogger(), LeaderLease: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	r := &flowStepRun{}
	q, err := task.Handle(a, "rq", func(ctx context.Context, tk *task.Task[string]) (string, error) {
		if tk.Payload == "KID" {
			r.kidStart.CompareAndSwap(0, time.Now().UnixNano())
			r.kidRuns.Add(1)
			if _, ok := tk.Parents["lossy-parent"]; !ok {
				return "", task.SkipRetry(errors.New("no parent result"))
			}
			return "kid", nil
		}
		r.parentRuns.Add(1)
		armed.Store(true)
		r.parentDone.Store(time.Now().UnixNano())
		return tk.Payload, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	(&env{t: t, client: nil, prefix: prefix}).run(a)
	f := task.NewFlow(a)
	task.AddNode(f, "kid", q, "KID").After(task.AddNode(f, "lossy-parent", q, "P"))
	id, err := f.Submit(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return r, a, id
}

// checkFlowStep checks that the flow succeeded with each node run once,
// the kid started within within of the parent's end (the sweep is off:
// only the worker can have moved the flow on), and the flow is among the
// ended flows, not the live ones.
func checkFlowStep(t *testing.T, c redis.UniversalClient, prefix string, a *app.App, id string, r *flowStepRun, within time.Duration) {
	t.Helper()
	ctx := ctxT(t)
	wctx, cancel := context.WithTimeout(ctx, within+5*time.Second)
	defer cancel()
	info, err := task.WaitFlow(wctx, a, id)
	if err != nil || info.State != task.FlowSucceeded || string(info.Results["kid"]) != `"kid"` {
		t.Fatalf("flow %+v %v", info, err)
	}
	if k, p := r.kidRuns.Load(), r.parentRuns.Load(); k != 1 || p != 1 {
		t.Fatalf("the kid ran %d times, the parent %d; want once each", k, p)
	}
	d := time.Duration(r.kidStart.Load() - r.parentDone.Load())
	if d > within {
		t.Fatalf("the kid started %s after its parent ended, want within %s", d, within)
	}
	t.Logf("the kid started %s after its parent ended", d)
	redistest.Eventually(t, within, "the flow among the ended flows", func() bool {
		done, err := c.ZScore(ctx, prefix+":fdone:{shop}", id).Result()
		live, lerr := c.ZScore(ctx, prefix+":flive:{shop}", id).Result()
		return err == nil && done > 0 && errors.Is(lerr, redis.Nil) && live == 0
	})
}

// The reply of a flow step is lost (the link broke after Redis ran it;
// the client's retries are off): the worker sends the step again within a
// couple of seconds, long before the sweep would have looked at the flow,
// and the child runs once, the flow ends once.
func TestFlowStepRetriedAfterLostReply(t *testing.T) {
	noSweep(t)
	for _, tc := range []struct {
		name  string
		match string // what the lost command holds
	}{
		// the parent's outcome recorded in the flow: the kid to release
		{"parent's step", "$12\r\nlossy-parent\r\n$9\r\nsucceeded\r\n"},
		// the kid's: the flow ended, to move to the ended flows
		{"last step", "$3\r\nkid\r\n$9\r\nsucceeded\r\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			base, prefix := redistest.Client(t)
			lose := &redistest.ReplyLoser{Match: []byte(tc.match)}
			var arm atomic.Bool
			lose.Armed = func() bool { return arm.Load() && lose.Lost() < 1 }
			opt := *base.Options()
			opt.Dialer, opt.MaxRetries = lose.Dial, -1
			opt.MaintNotificationsConfig = &maintnotifications.Config{Mode: maintnotifications.ModeDisabled}
			c := redis.NewClient(&opt)
			t.Cleanup(func() { _ = c.Close() })
			r, a, id := runFlowStep(t, c, prefix, &arm)
			checkFlowStep(t, base, prefix, a, id, r, 3*time.Second)
			if lose.Lost() != 1 {
				t.Fatalf("%d replies lost, want 1", lose.Lost())
			}
		})
	}
}

// cutDialer dials connections whose first write holding match, once armed,
// is not sent: it calls hit (which returns once Redis is down) and fails
// as a reset link. It counts the dials that failed.
type cutDialer struct {
	match    []byte
	armed    atomic.Bool
	cut      atomic.Bool
	hit      func()
	dialer   net.Dialer
	dialFail atomic.Int32
}

func (d *cutDialer) Dial(ctx context.Context, network, addr string) (net.Conn, error) {
	c, err := d.dialer.DialContext(ctx, network, addr)
	if err != nil {
		d.dialFail.Add(1)
		return nil, err
	}
	return &cutConn{Conn: c, d: d}, nil
}

type cutConn struct {
	net.Conn
	d *cutDialer
}

func (c *cutConn) Write(b []byte) (int, error) {
	if c.d.armed.Load() && bytes.Contains(b, c.d.match) && c.d.cut.CompareAndSwap(false, true) {
		c.d.hit()
		_ = c.Conn.Close()
		return 0, &net.OpError{Op: "write", Net: "tcp", Err: syscall.ECONNRESET}
	}
	return c.Conn.Write(b)
}

// A flow step fails because Redis restarts (the link cut as the step was
// sent, nothing of it run; Redis down, then loading its data): the worker
// tries the step again until Redis is back, and the child starts within a
// couple of seconds of it, long before the sweep would have looked at the
// flow; it runs once, and the flow ends once.
func TestFlowStepRetriedWhileRedisRestarts(t *testing.T) {
	noSweep(t)
	srv := redistest.StartPersistent(t)
	base := srv.Client(t)
	const prefix = "restart"
	down := make(chan struct{})
	hits := make(chan struct{}, 1)
	d := &cutDialer{match: []byte("$12\r\nlossy-parent\r\n$9\r\nsucceeded\r\n")}
	d.hit = func() {
		hits <- struct{}{}
		<-down
	}
	opt := *base.Options()
	opt.Dialer, opt.MaxRetries = d.Dial, -1
	opt.MaintNotificationsConfig = &maintnotifications.Config{Mode: maintnotifications.ModeDisabled}
	c := redis.NewClient(&opt)
	t.Cleanup(func() { _ = c.Close() })
	r, a, id := runFlowStep(t, c, prefix, &d.armed)

	select {
	case <-hits:
	case <-time.After(30 * time.Second):
		t.Fatal("the parent's flow step was never sent")
	}
	srv.Shutdown(t)
	close(down)
	// the worker's tries find Redis down a few times
	redistest.Eventually(t, 10*time.Second, "dials refused", func() bool { return d.dialFail.Load() >= 3 })
	srv.Relaunch(t)
	back := time.Now()
	checkFlowStep(t, base, prefix, a, id, r, 10*time.Second)
	after := time.Duration(r.kidStart.Load() - back.UnixNano())
	if after > 3*time.Second {
		t.Fatalf("the kid started %s after Redis was back, want within 3s", after)
	}
	t.Logf("the kid started %s after Redis was back", after)
}
