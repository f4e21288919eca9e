package topology_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/leatdev/leat/internal/tools/redistest"
	"github.com/leatdev/leat/internal/topology"
	"github.com/redis/go-redis/v9"
)

// reply is a Redis error reply, as go-redis returns them.
type reply string

func (r reply) Error() string { return string(r) }
func (reply) RedisError()     {}

func TestIsTransient(t *testing.T) {
	t.Parallel()
	dial := &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}
	for _, tc := range []struct {
		name string
		err  error
		want bool
	}{
		{"nil", nil, false},
		{"EOF", io.EOF, true},
		{"unexpected EOF, wrapped", fmt.Errorf("read: %w", io.ErrUnexpectedEOF), true},
		{"connection refused", dial, true},
		{"dial timeout", &net.OpError{Op: "dial", Net: "tcp", Err: context.DeadlineExceeded}, true},
		{"connection reset", &net.OpError{Op: "read", Net: "tcp", Err: os.NewSyscallError("read", syscall.ECONNRESET)}, true},
		{"broken pipe", &net.OpError{Op: "write", Net: "tcp", Err: os.NewSyscallError("write", syscall.EPIPE)}, true},
		{"i/o timeout", &net.OpError{Op: "read", Net: "tcp", Err: os.ErrDeadlineExceeded}, true},
		{"pool timeout", redis.ErrPoolTimeout, true},
		{"LOADING", reply("LOADING Redis is loading the dataset in memory"), true},
		{"CLUSTERDOWN", reply("CLUSTERDOWN The cluster is down"), true},
		{"TRYAGAIN", reply("TRYAGAIN Multiple keys request during rehashing of slot"), true},
		{"READONLY", reply("READONLY You can't write against a read only replica."), true},
		{"MASTERDOWN", reply("MASTERDOWN Link with MASTER is down and replica-serve-stale-data is set to 'no'."), true},
		{"NOREPLICAS", reply("NOREPLICAS Not enough good replicas to write."), true},
		{"UNBLOCKED", reply("UNBLOCKED force unblock from blocking operation, instance state changed (master -> replica?)"), true},
		{"MOVED from a pipeline", fmt.Errorf("xadd: %w", reply("MOVED 3999 127.0.0.1:6381")), true},
		{"ASK", reply("ASK 3999 127.0.0.1:6381"), true},
		{"max clients", reply("ERR max number of clients reached"), true},
		{"joined", errors.Join(errors.New("first"), reply("TRYAGAIN slot migrating")), true},
		{"two wraps", fmt.Errorf("%w: %w", errors.New("processor"), reply("LOADING x")), true},
		{"cluster node without a cluster client", fmt.Errorf("%w: %w", topology.ErrClusterNode, reply("MOVED 1 h:1")), false},
		{"canceled", context.Canceled, false},
		{"deadline", fmt.Errorf("call: %w", context.DeadlineExceeded), false},
		{"client closed", redis.ErrClosed, false},
		{"WRONGTYPE", reply("WRONGTYPE Operation against a key holding the wrong kind of value"), false},
		{"NOPERM", reply("NOPERM User x has no permissions to run the 'xadd' command"), false},
		{"OOM", reply("OOM command not allowed when used memory > 'maxmemory'."), false},
		{"script error", reply("ERR user_script:1: Script attempted to access nonexistent global variable"), false},
		{"NOSCRIPT", redis.ErrNoScript, false},
		{"CROSSSLOT", redis.ErrCrossSlot, false},
		{"the text of one, not a reply", errors.New("LOADING my own cache"), false},
		{"application", errors.New("boom"), false},
	} {
		if got := topology.IsTransient(tc.err); got != tc.want {
			t.Errorf("%s: IsTransient(%v) = %t, want %t", tc.name, tc.err, got, tc.want)
		}
	}
}

// The errors go-redis returns for real failures are classified like their
// kinds above.
func TestIsTransientRealErrors(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	noRetry := func(addr string) *redis.Client {
		c := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, DialTimeout: time.Second,
			ReadTimeout: 200 * time.Millisecond, WriteTimeout: 200 * time.Millisecond})
		t.Cleanup(func() { c.Close() })
		return c
	}
	check := func(what string, err error, want bool) {
		t.Helper()
		if err == nil || topology.IsTransient(err) != want {
			t.Errorf("%s: IsTransient(%v) = %t, want %t", what, err, !want, want)
		}
	}

	// Nothing listens on a port just released.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := l.Addr().String()
	l.Close()
	check("connection refused", noRetry(closed).Ping(ctx).Err(), true)

	// A frozen link: the read times out.
	proxy := redistest.NewProxy(t, redistest.URL(t))
	frozen := noRetry(proxy.URL()[len("redis://"):])
	if err := frozen.Ping(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	proxy.Freeze()
	check("i/o timeout", frozen.Ping(ctx).Err(), true)
	proxy.Thaw()

	// A server restarted during a command.
	srv := redistest.Start(t)
	c := noRetry(srv.Addr)
	watcher := noRetry(srv.Addr)
	blocked := make(chan error, 1)
	go func() { blocked <- c.BLPop(ctx, 0, "list").Err() }()
	redistest.Eventually(t, 10*time.Second, "a blocked client", func() bool {
		info, _ := watcher.Info(ctx, "clients").Result()
		return strings.Contains(info, "blocked_clients:1")
	})
	srv.Restart(t)
	check("server restarted", <-blocked, true)

	// A master turned replica (of a master that is gone) refuses writes.
	if err := c.Do(ctx, "REPLICAOF", "127.0.0.1", strconv.Itoa(freePortOf(closed))).Err(); err != nil {
		t.Fatal(err)
	}
	check("READONLY", c.Set(ctx, "k", "v", 0).Err(), true)
	pipe := c.Pipeline()
	pipe.Set(ctx, "k", "v", 0)
	pipe.Incr(ctx, "n")
	_, err = pipe.Exec(ctx)
	check("READONLY in a pipeline", err, true)
	if err := c.Do(ctx, "REPLICAOF", "NO", "ONE").Err(); err != nil {
		t.Fatal(err)
	}

	// Requests that are wrong stay wrong.
	c.HSet(ctx, "h", "f", "v")
	check("WRONGTYPE", c.Incr(ctx, "h").Err(), false)
	check("unknown command", c.Do(ctx, "NOSUCHCOMMAND").Err(), false)
	check("script error", c.Eval(ctx, "return redis.call('nosuch')", nil).Err(), false)
}

// freePortOf returns the port of addr, host:port.
func freePortOf(addr string) int {
	_, p, _ := net.SplitHostPort(addr)
	n, _ := strconv.Atoi(p)
	return n
}

// The classifier runs once per failed processor call and per failed write:
// its cost for an application error (the common case), a wrapped reply and a
// network error.
func BenchmarkIsTransient(b *testing.B) {
	for _, bc := range []struct {
		name string
		err  error
	}{
		{"application", fmt.Errorf("order 7: %w", errors.New("boom"))},
		{"reply", fmt.Errorf("xadd: %w", reply("READONLY You can't write against a read only replica."))},
		{"network", &net.OpError{Op: "read", Net: "tcp", Err: os.NewSyscallError("read", syscall.ECONNRESET)}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			for b.Loop() {
				topology.IsTransient(bc.err)
			}
		})
	}
}
