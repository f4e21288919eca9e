package task

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/leatdev/leat/internal/rdb"
	"github.com/leatdev/leat/internal/tools/redistest"
	"github.com/redis/go-redis/v9"
)

// lockedBuffer is a log sink safe for concurrent writes.
type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// replyErr is an error reply of Redis.
type replyErr string

func (e replyErr) Error() string { return string(e) }
func (replyErr) RedisError()     {}

// The waits between tries of a flow step double from 50ms up to 2s, and
// stay there.
func TestFlowRetryBackoff(t *testing.T) {
	t.Parallel()
	want := []time.Duration{50, 100, 200, 400, 800, 1600, 2000, 2000, 2000}
	for try, w := range want {
		if got := flowRetryWait(try); got != w*time.Millisecond {
			t.Errorf("wait before try %d: %s, want %s", try, got, w*time.Millisecond)
		}
	}
	if got := flowRetryWait(1000); got != flowRetryMax {
		t.Errorf("wait before try 1000: %s", got)
	}
}

// Only failures that pass are tried again, as for task outcomes: a lost
// link, Redis loading its data or at maxmemory; not a mistake (a
// permission the user lacks, a key of the wrong type).
func TestFlowRetryClassifiesFailures(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		err  error
		pass bool
	}{
		{&net.OpError{Op: "read", Net: "tcp", Err: syscall.ECONNRESET}, true},
		{&net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}, true},
		{redis.ErrPoolTimeout, true},
		{replyErr("LOADING Redis is loading the dataset in memory"), true},
		{fmt.Errorf("queue %q: %w", "q", errors.New("OOM command not allowed when used memory > 'maxmemory'.")), true},
		{errors.Join(errors.New("x"), fmt.Errorf("queue %q: %w", "q", replyErr("LOADING Redis is loading"))), true},
		{replyErr("NOPERM User u has no permissions to run the 'evalsha' command"), false},
		{replyErr("WRONGTYPE Operation against a key holding the wrong kind of value"), false},
		{context.Canceled, false},
	} {
		if got := passingFailure(tc.err); got != tc.pass {
			t.Errorf("%v: passes %v, want %v", tc.err, got, tc.pass)
		}
	}
}

// A worker holds at most flowRetryCap flow steps to try again: beyond, a
// step is left to the sweep, and that is logged once (until there is room
// again).
func TestFlowRetryCap(t *testing.T) {
	t.Parallel()
	var logs lockedBuffer
	r := newFlowRetrier(&core{log: slog.New(slog.NewTextHandler(&logs, nil))})
	for i := range flowRetryCap + 10 {
		r.add(rdb.NodeEnd{Flow: "f", Node: fmt.Sprint(i), Outcome: "succeeded"})
	}
	if n := r.held(); n != flowRetryCap {
		t.Fatalf("%d steps held, want %d", n, flowRetryCap)
	}
	if n := strings.Count(logs.String(), "too many flow steps"); n != 1 {
		t.Fatalf("the cap logged %d times, want once:\n%s", n, logs.String())
	}
}

// A step that fails with a failure that passes is queued again with a
// longer wait; one that fails with a mistake (here a flow record of the
// wrong type) is dropped and logged; one whose task no longer ended (it
// runs again) is dropped. The retrier's goroutine ends with its context,
// steps still held.
func TestFlowRetryTries(t *testing.T) {
	t.Parallel()
	c, prefix := redistest.Client(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ks := rdb.NewKeySpace(prefix, "shop")
	var logs lockedBuffer
	q := &core{name: "q", rdb: c, ks: ks, log: slog.New(slog.NewTextHandler(&logs, nil))}
	hash := func(flow, node string) string { return ks.TaskPrefix("q") + FlowTaskID(flow, node) }
	if err := c.HSet(ctx, hash("bad", "n"), "s", "succeeded", "res", `1`).Err(); err != nil {
		t.Fatal(err)
	}
	if err := c.Set(ctx, ks.Flow("bad"), "not a hash", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if err := c.HSet(ctx, hash("again", "n"), "s", "running").Err(); err != nil {
		t.Fatal(err)
	}

	r := newFlowRetrier(q)
	r.try(ctx, []flowRetry{{end: rdb.NodeEnd{Flow: "bad", Node: "n", Outcome: "succeeded"}}, {end: rdb.NodeEnd{Flow: "again", Node: "n", Outcome: "failed"}}})
	if n := r.held(); n != 0 {
		t.Fatalf("%d steps held after a mistake and a task running again, want 0", n)
	}
	if !strings.Contains(logs.String(), "WRONGTYPE") {
		t.Fatalf("the mistake not logged:\n%s", logs.String())
	}

	// Redis unreachable: the step waits for its next try, twice as long
	down := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1, DialTimeout: time.Second})
	t.Cleanup(func() { _ = down.Close() })
	r = newFlowRetrier(&core{name: "q", rdb: down, ks: ks, log: q.log})
	before := time.Now()
	r.try(ctx, []flowRetry{{end: rdb.NodeEnd{Flow: "f", Node: "n", Outcome: "succeeded"}, try: 1}})
	steps, next := r.due(time.Now())
	if len(steps) != 0 || r.held() != 1 || next.Before(before.Add(flowRetryWait(2))) {
		t.Fatalf("after a failure that passes: %d due, %d held, next in %s", len(steps), r.held(), next.Sub(before))
	}

	runCtx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); r.run(runCtx) }()
	stop()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the retrier did not stop")
	}
}
