package topology

import (
	"context"
	"errors"
	"io"
	"net"
	"strings"
	"syscall"

	"github.com/redis/go-redis/v9"
)

// ErrClusterNode is a single-server client talking to a Redis Cluster node
// (re-exported by package app): a configuration mistake, never transient,
// though the replies that reveal it are MOVED redirections.
var ErrClusterNode = errors.New("the Redis server is a node of a Redis Cluster, and the app was not told to use a cluster")

// transientReplies are the prefixes of Redis error replies that a failover,
// a restart or a resharding causes and that go away by themselves: a server
// loading its data set, a cluster without a majority or with slots
// unserved, a multi-key command during a slot migration, a replica not yet
// promoted, a replica that lost its master, too few replicas for a write, a
// client unblocked by a role change, a redirection that was not followed
// (as a script or a pipeline may return), too many clients.
var transientReplies = []string{
	"LOADING ", "CLUSTERDOWN ", "TRYAGAIN ", "READONLY ", "MASTERDOWN ", "NOREPLICAS ", "UNBLOCKED ",
	"MOVED ", "ASK ", "max number of clients reached",
}

// IsTransient reports whether err is a failure of Redis or of the way to it
// that goes away by itself within seconds, so that the same call may well
// succeed if tried again: a connection refused, reset or closed (EOF), a
// network timeout, the client's pool exhausted, and the replies in
// transientReplies, anywhere in err's chain (errors.Join included).
//
// A context's own end (context.Canceled, context.DeadlineExceeded) is not
// transient: the caller gave up. Neither are errors that name a mistake
// (wrong type, no permission, a script error, out of memory, a cluster node
// reached without a cluster client) nor any error of the application.
func IsTransient(err error) bool {
	if err == nil || errors.Is(err, ErrClusterNode) {
		return false
	}
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) ||
		errors.Is(err, syscall.ECONNABORTED) || errors.Is(err, syscall.EPIPE) ||
		errors.Is(err, syscall.ETIMEDOUT) || errors.Is(err, syscall.EHOSTUNREACH) ||
		errors.Is(err, syscall.ENETUNREACH) || errors.Is(err, redis.ErrPoolTimeout) ||
		errors.Is(err, redis.ErrPoolExhausted) {
		return true
	}
	var op *net.OpError
	if errors.As(err, &op) && op.Op == "dial" {
		return true
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return true // a read or write deadline of a connection: "i/o timeout"
	}
	return transientReply(err)
}

// transientReply reports whether a Redis error reply in err's chain starts
// with one of transientReplies.
func transientReply(err error) bool {
	switch e := err.(type) { //nolint:errorlint // walks the chain itself, joins included
	case interface{ Unwrap() []error }:
		for _, inner := range e.Unwrap() {
			if transientReply(inner) {
				return true
			}
		}
		return false
	case redis.Error:
		msg := strings.TrimPrefix(e.Error(), "ERR ") // "ERR max number of clients reached", and KVRocks's prefix
		for _, p := range transientReplies {
			if strings.HasPrefix(msg, p) {
				return true
			}
		}
		return false
	}
	if inner := errors.Unwrap(err); inner != nil {
		return transientReply(inner)
	}
	return false
}
