package cmd

import (
	"bufio"
	"context"
	"net"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// A TLS client (rediss://) talking to a plain Redis server gets no answer:
// the server waits for the end of a command line in the TLS handshake, until
// the ping times out. So when a rediss:// ping has not answered within
// tlsProbeDelay, or has failed, the CLI asks the same address in plain text
// whether it is a Redis server without TLS, and says so.
const (
	tlsProbeDelay   = time.Second
	tlsProbeTimeout = time.Second
)

// ping checks that Redis answers at url within pingTimeout, with the hint
// above for rediss:// URLs; url is "" when the app brought its own client.
func ping(ctx context.Context, url string, fn func(context.Context) error) error {
	ctx, cancel := context.WithTimeout(ctx, pingTimeout)
	defer cancel()
	addr := ""
	if strings.HasPrefix(strings.ToLower(url), "rediss://") {
		if opt, err := redis.ParseURL(url); err == nil {
			addr = opt.Addr
		}
	}
	if addr == "" {
		err := fn(ctx)
		if plain := plainURLAddr(url); plain != "" && droppedPlain(err) && tlsAt(ctx, plain) {
			return errTLSExpected
		}
		return err
	}
	done := make(chan error, 1)
	go func() { done <- fn(ctx) }()
	timer := time.NewTimer(tlsProbeDelay)
	defer timer.Stop()
	select {
	case err := <-done:
		if err != nil && plainRedisAt(ctx, addr) {
			return errTLSNotEnabled
		}
		return clientCertHint(ctx, addr, err)
	case <-timer.C:
		if plainRedisAt(ctx, addr) {
			cancel()
			<-done
			return errTLSNotEnabled
		}
		return clientCertHint(ctx, addr, <-done)
	}
}

// errTLSNotEnabled is a rediss:// URL naming a server that speaks plain RESP.
var errTLSNotEnabled = tlsNotEnabledError{}

type tlsNotEnabledError struct{}

func (tlsNotEnabledError) Error() string {
	return "the TLS handshake got no answer, and the server answers plain Redis commands: " +
		"it looks like TLS is not enabled there (use redis:// to connect without TLS)"
}

// plainRedisAt reports whether addr answers PING in plain text, as a Redis
// server without TLS does (+PONG, or an error such as -NOAUTH).
func plainRedisAt(ctx context.Context, addr string) bool {
	ctx, cancel := context.WithTimeout(ctx, tlsProbeTimeout)
	defer cancel()
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return false
	}
	defer conn.Close()
	deadline, _ := ctx.Deadline()
	_ = conn.SetDeadline(deadline)
	if _, err := conn.Write([]byte("PING\r\n")); err != nil {
		return false
	}
	line, err := bufio.NewReader(conn).ReadString('\n')
	if err != nil {
		return false
	}
	return strings.HasPrefix(line, "+PONG") || strings.HasPrefix(line, "-NOAUTH") ||
		strings.HasPrefix(line, "-ERR") || strings.HasPrefix(line, "-WRONGPASS")
}
