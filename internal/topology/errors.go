// Package topology follows Redis Cluster through topology changes: it tells
// which errors mean that the client's slot map is stale (a master died, a
// replica was promoted, a slot moved), whether the failed command ran, and
// it attaches a hook to cluster clients that reloads their slot map as soon
// as such an error is seen. IsTransient (transient.go) says whether an
// error of Redis or of the way to it goes away by itself, for the retries
// of the runtime (stream.IsTransient).
//
// go-redis reloads a cluster client's slot map on a MOVED reply to a single
// command and otherwise only from time to time; a pipeline whose node died
// keeps failing with "connection refused" until then, and every node of a
// cluster that lost a master answers CLUSTERDOWN until a replica took over.
// The hook (Attach) asks for a reload at the first such error, at most once
// per ReloadEvery, and go-redis itself spaces reloads by 200ms, so a failover
// costs the client its own duration plus a reload, not a minute.
package topology

import (
	"context"
	"errors"
	"io"
	"net"
	"os"
	"strings"
	"syscall"

	"github.com/redis/go-redis/v9"
)

// Outcome is what an error says about the command that failed.
type Outcome int

const (
	// Final: the error is an answer (a wrong type, a script error, a denied
	// command) or the caller's own context ended: do not retry.
	Final Outcome = iota
	// NotRun: the command did not run (the connection was refused, or the
	// node answered CLUSTERDOWN, MOVED, ASK, TRYAGAIN, READONLY, MASTERDOWN
	// or LOADING): it can be sent again without running twice.
	NotRun
	// Unknown: the connection broke or timed out after the command was
	// written, so it may or may not have run: sending it again may run it
	// twice.
	Unknown
)

// Classify says what err, the error of one command, means for it.
func Classify(err error) Outcome {
	switch {
	case err == nil, errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded),
		errors.Is(err, redis.ErrClosed):
		return Final
	case redirected(err), redis.IsClusterDownError(err), redis.IsTryAgainError(err),
		redis.IsReadOnlyError(err), redis.IsMasterDownError(err), redis.IsLoadingError(err),
		refused(err):
		return NotRun
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, syscall.ECONNRESET),
		errors.Is(err, syscall.EPIPE), errors.Is(err, os.ErrDeadlineExceeded):
		return Unknown
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return Unknown
	}
	return Final
}

// Stale reports whether err suggests that the slot map of a cluster client
// is out of date: the node is gone (refused, reset, closed), or says it does
// not serve the slot now (CLUSTERDOWN, MOVED, ASK, TRYAGAIN, READONLY,
// MASTERDOWN). Timeouts do not count: a slow node is not a moved slot.
func Stale(err error) bool {
	if err == nil {
		return false
	}
	switch {
	case redirected(err), redis.IsClusterDownError(err), redis.IsTryAgainError(err),
		redis.IsReadOnlyError(err), redis.IsMasterDownError(err), refused(err),
		errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF),
		errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE):
		return true
	}
	return false
}

func redirected(err error) bool {
	if _, ok := redis.IsMovedError(err); ok {
		return true
	}
	_, ok := redis.IsAskError(err)
	return ok
}

// refused reports whether no connection could be made: nothing was written.
func refused(err error) bool {
	if errors.Is(err, syscall.ECONNREFUSED) {
		return true
	}
	var oe *net.OpError
	return errors.As(err, &oe) && oe.Op == "dial"
}

// Denied reports whether err is the server refusing a command to the Redis
// user (ACL: NOPERM).
func Denied(err error) bool { return err != nil && strings.Contains(err.Error(), "NOPERM") }

// Unsupported reports whether err says the server (or a proxy in front of
// it) does not know a command.
func Unsupported(err error) bool {
	if err == nil {
		return false
	}
	msg := strings.ToLower(err.Error())
	return strings.Contains(msg, "unknown subcommand") || strings.Contains(msg, "unknown command")
}

// Grant returns the ACL rule that allows command ("CLIENT UNBLOCK" gives
// "+client|unblock"), for messages that say what to grant.
func Grant(command string) string {
	return "+" + strings.ToLower(strings.ReplaceAll(command, " ", "|"))
}
