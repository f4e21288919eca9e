package redistest

import (
	"bytes"
	"context"
	"io"
	"net"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"
)

// ReplyLoser dials connections (set Dial as a go-redis client's Dialer)
// that, while Armed says so (nil: always), let each command whose bytes
// contain Match reach Redis and be answered, then drop the reply and break
// the connection, as a crash or a reset on the way back would. An error
// reply (NOSCRIPT: the EVAL that follows runs the script) goes through.
// A command containing any of Also is lost as one containing Match; with
// ArmedFor set, it is asked instead of Armed, with the string matched.
type ReplyLoser struct {
	Match    []byte
	Also     [][]byte
	Armed    func() bool
	ArmedFor func(match []byte) bool

	lost   atomic.Int32
	dialer net.Dialer
}

// Lost returns the number of replies dropped so far.
func (l *ReplyLoser) Lost() int { return int(l.lost.Load()) }

// Client returns a client with base's options whose connections are the
// loser's, closed when the test ends.
func (l *ReplyLoser) Client(tb testing.TB, base *redis.Client) *redis.Client {
	opt := *base.Options()
	opt.Dialer = l.Dial
	opt.MaintNotificationsConfig = &maintnotifications.Config{Mode: maintnotifications.ModeDisabled}
	c := redis.NewClient(&opt)
	tb.Cleanup(func() { _ = c.Close() })
	return c
}

// Dial dials a connection of the loser.
func (l *ReplyLoser) Dial(ctx context.Context, network, addr string) (net.Conn, error) {
	c, err := l.dialer.DialContext(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	return &losingConn{Conn: c, l: l}, nil
}

type losingConn struct {
	net.Conn
	l      *ReplyLoser
	drop   bool // the reply to the last write is to be dropped
	broken bool // a reply was dropped: the connection acts as reset
}

func (c *losingConn) Write(b []byte) (int, error) {
	if c.broken {
		return 0, &net.OpError{Op: "write", Net: "tcp", Err: syscall.ECONNRESET}
	}
	if c.l.armed(b) {
		c.drop = true
	}
	return c.Conn.Write(b)
}

func (c *losingConn) Read(b []byte) (int, error) {
	if c.broken {
		return 0, &net.OpError{Op: "read", Net: "tcp", Err: syscall.ECONNRESET}
	}
	if !c.drop {
		return c.Conn.Read(b)
	}
	// The reply arrives, so the command ran; the caller never sees it.
	n, err := c.Conn.Read(b)
	c.drop = false
	if err == nil && n > 0 && b[0] == '-' {
		return n, nil
	}
	_ = c.Conn.Close()
	c.broken = true
	if err == nil {
		c.l.lost.Add(1)
		err = io.ErrUnexpectedEOF
	}
	return 0, err
}

// armed reports whether the reply to the command b is to be lost.
func (l *ReplyLoser) armed(b []byte) bool {
	for _, m := range append([][]byte{l.Match}, l.Also...) {
		if !bytes.Contains(b, m) {
			continue
		}
		switch {
		case l.ArmedFor != nil:
			return l.ArmedFor(m)
		case l.Armed != nil:
			return l.Armed()
		}
		return true
	}
	return false
}
