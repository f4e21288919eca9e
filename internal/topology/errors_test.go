package topology_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"syscall"
	"testing"

	"github.com/leatdev/leat/internal/tools/redistest"
	"github.com/leatdev/leat/internal/topology"
	"github.com/redis/go-redis/v9"
)

func TestMain(m *testing.M) { redistest.Main(m) }

// replyErr returns the error go-redis gives for an error reply msg.
func replyErr(t *testing.T, msg string) error {
	t.Helper()
	c, prefix := redistest.Client(t)
	// EVAL of a script that answers with msg, as a node would.
	err := c.Eval(context.Background(), "return redis.error_reply(ARGV[1])", []string{prefix + ":k"}, msg).Err()
	if err == nil {
		t.Fatalf("no error for %q", msg)
	}
	return err
}

func TestClassify(t *testing.T) {
	t.Parallel()
	dial := &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}
	read := &net.OpError{Op: "read", Net: "tcp", Err: syscall.ECONNRESET}
	for _, tc := range []struct {
		name  string
		err   error
		want  topology.Outcome
		stale bool
	}{
		{"nil", nil, topology.Final, false},
		{"refused", dial, topology.NotRun, true},
		{"refused wrapped", fmt.Errorf("send: %w", dial), topology.NotRun, true},
		{"CLUSTERDOWN", replyErr(t, "CLUSTERDOWN The cluster is down"), topology.NotRun, true},
		{"MOVED", replyErr(t, "MOVED 3999 127.0.0.1:6381"), topology.NotRun, true},
		{"ASK", replyErr(t, "ASK 3999 127.0.0.1:6381"), topology.NotRun, true},
		{"TRYAGAIN", replyErr(t, "TRYAGAIN Multiple keys request during rehashing of slot"), topology.NotRun, true},
		{"READONLY", replyErr(t, "READONLY You can't write against a read only replica."), topology.NotRun, true},
		{"MASTERDOWN", replyErr(t, "MASTERDOWN Link with MASTER is down"), topology.NotRun, true},
		{"LOADING", replyErr(t, "LOADING Redis is loading the dataset in memory"), topology.NotRun, false},
		{"reset", read, topology.Unknown, true},
		{"EOF", io.EOF, topology.Unknown, true},
		{"timeout", &net.OpError{Op: "read", Net: "tcp", Err: timeoutErr{}}, topology.Unknown, false},
		{"WRONGTYPE", replyErr(t, "WRONGTYPE Operation against a key holding the wrong kind of value"), topology.Final, false},
		{"canceled", context.Canceled, topology.Final, false},
		{"closed client", redis.ErrClosed, topology.Final, false},
		{"other", errors.New("boom"), topology.Final, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := topology.Classify(tc.err); got != tc.want {
				t.Errorf("Classify(%v) = %d, want %d", tc.err, got, tc.want)
			}
			if got := topology.Stale(tc.err); got != tc.stale {
				t.Errorf("Stale(%v) = %v, want %v", tc.err, got, tc.stale)
			}
		})
	}
}

type timeoutErr struct{}

func (timeoutErr) Error() string   { return "i/o timeout" }
func (timeoutErr) Timeout() bool   { return true }
func (timeoutErr) Temporary() bool { return true }
