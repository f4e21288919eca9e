package cmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"regexp"
	"strings"

	"github.com/leatdev/leat/app"
	"github.com/leatdev/leat/internal/core"
	"github.com/leatdev/leat/stream"
	"github.com/redis/go-redis/v9"
	"github.com/urfave/cli/v2"
)

// Exit statuses of leat commands.
const (
	exitOK      = 0 // the command did what was asked
	exitFailure = 1 // runtime failure: Redis unreachable, refusing or failing; I/O errors
	exitUsage   = 2 // the user's mistake: flags, arguments, records, unknown streams, routing conflicts
)

// usageError marks err as the user's mistake (exit status 2).
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

func usageErrorf(format string, args ...any) error {
	return usageError{fmt.Errorf(format, args...)}
}

// lineError is bad input at a line of a file: reported as "line N: reason",
// without the program name, so editors and scripts can jump to it.
type lineError struct {
	line int
	err  error
}

func (e lineError) Error() string { return fmt.Sprintf("line %d: %v", e.line, e.err) }
func (e lineError) Unwrap() error { return e.err }

// onUsageError turns a flag parsing error of urfave/cli into a usageError, so
// that it is reported like the others instead of with a help dump.
//
// A global flag given after the command is named as such: urfave/cli parses
// the global flags before the command only.
func onUsageError(c *cli.Context, err error, isSubcommand bool) error {
	if isSubcommand {
		if name, ok := strings.CutPrefix(err.Error(), "flag provided but not defined: -"); ok && isGlobalFlag(name) {
			return globalFlagError(c.App.Name, c.Command.Name, name)
		}
		return usageErrorf("%s: %w", c.Command.Name, err)
	}
	return usageError{err}
}

// globalFlags are the names of the flags given before the command.
var globalFlags = []string{flagRedis, flagCluster, flagTLSCA, flagTLSCert, flagTLSKey, flagTLSServerName, flagApp, flagPrefix, flagLogLevel}

func isGlobalFlag(name string) bool {
	name = strings.TrimLeft(name, "-")
	name, _, _ = strings.Cut(name, "=")
	for _, g := range globalFlags {
		if name == g {
			return true
		}
	}
	return false
}

func globalFlagError(program, command, flag string) error {
	flag = strings.TrimLeft(flag, "-")
	flag, _, _ = strings.Cut(flag, "=")
	return usageErrorf("%s: --%s is a global flag: put it before the command, as in %s --%s VALUE %s ...",
		command, flag, program, flag, command)
}

// connectError is a failed first contact with the Redis server at url
// (without credentials; empty when the app brought its own client).
type connectError struct {
	url    string
	master string // the master's name, when url is a Sentinel URL
	err    error
}

func (e *connectError) Error() string { return "connect to Redis: " + e.err.Error() }
func (e *connectError) Unwrap() error { return e.err }

// report writes err to w as one line starting with "leat: " and returns the
// exit status for it; a nil err writes nothing and returns 0.
func report(w io.Writer, err error) int {
	if err == nil {
		return exitOK
	}
	var fe fileErrors
	if errors.As(err, &fe) {
		// One mistake of a file per line, "FILE:LINE: field: reason",
		// for editors and scripts to jump to.
		_, status := explain(err)
		fmt.Fprintf(w, "leat: %d %s in %s (%s):\n%s\n", len(fe.errs), plural(len(fe.errs), "error"), fe.errs[0].File, fe.then, fe.errs)
		return status
	}
	msg, status := explain(err)
	msg = strings.Join(strings.Fields(strings.ReplaceAll(msg, "\n", "; ")), " ")
	msg = packagePrefix.ReplaceAllString(msg, "$1")
	var le lineError
	if errors.As(err, &le) {
		fmt.Fprintf(w, "%s\n", msg)
		return status
	}
	fmt.Fprintf(w, "leat: %s\n", msg)
	return status
}

// packagePrefix matches the package names that the library's errors start
// with, as Go errors do ("task: not found", "stream: unknown stream"), at
// the start of a message or of a wrapped cause. The CLI drops them so that
// every line reads "leat: what went wrong", in one style, however deep the
// error was made ("leat: handler failed: skip retry", not "leat: handler
// failed: leat: skip retry").
var packagePrefix = regexp.MustCompile(`(^|: )(?:leat|task|stream|app|executor|middleware|rebalance): `)

// explain returns the message and exit status of err.
func explain(err error) (string, int) {
	var ce *connectError
	var ue usageError
	var le lineError
	var ec cli.ExitCoder // only urfave/cli's own help errors
	switch {
	case redis.IsAuthError(err): // NOAUTH or WRONGPASS
		if errors.As(err, &ce) && ce.master != "" {
			return fmt.Sprintf("Redis refused the credentials: %s (in a Sentinel URL the user-info is the sentinels'; "+
				"the master's are ?username= and ?password=)", redisCause(err)), exitFailure
		}
		return "Redis refused the credentials: " + redisCause(err), exitFailure
	case errors.Is(err, app.ErrClusterNode):
		at := ""
		if errors.As(err, &ce) && ce.url != "" {
			at = " at " + ce.url
		}
		return fmt.Sprintf("the Redis server%s is a node of a Redis Cluster: pass --%s (or set LEAT_REDIS_CLUSTER=1) "+
			"to use the cluster through it, or name more nodes in the URL with ?addr=HOST:PORT", at, flagCluster), exitUsage
	case errors.As(err, &ce) && ce.master != "" && errors.Is(ce.err, redis.Nil):
		// SENTINEL GET-MASTER-ADDR-BY-NAME answers nil for a name it does
		// not monitor.
		return fmt.Sprintf("the sentinels at %s know no master named %q: correct ?master_name= "+
			"(SENTINEL MASTERS on a sentinel lists the names it monitors)", ce.url, ce.master), exitUsage
	case errors.As(err, &ce):
		at := ""
		if ce.url != "" {
			at = " at " + ce.url
		}
		if ce.master != "" {
			at += fmt.Sprintf(" (a sentinel of master %q)", ce.master)
		}
		if hint := tlsHint(ce.err); hint != "" {
			return fmt.Sprintf("cannot reach Redis%s: %s", at, hint), exitFailure
		}
		if errors.Is(ce.err, errTLSNotEnabled) || errors.Is(ce.err, errTLSExpected) {
			return fmt.Sprintf("cannot reach Redis%s: %v", at, ce.err), exitFailure
		}
		var re redis.Error
		if errors.As(ce.err, &re) && strings.Contains(re.Error(), "cluster support disabled") {
			return fmt.Sprintf("the Redis server%s is not a node of a Redis Cluster (%v): drop --%s and LEAT_REDIS_CLUSTER, "+
				"and ?addr= from the URL", at, re, flagCluster), exitUsage
		}
		if errors.As(ce.err, &re) {
			return fmt.Sprintf("Redis%s answered PING with an error: %v", at, re), exitFailure
		}
		return fmt.Sprintf("cannot reach Redis%s: %s", at, dialCause(ce.err)), exitFailure
	case errors.As(err, &le):
		return le.Error(), exitUsage
	case errors.As(err, &ue), errors.As(err, &ec),
		errors.Is(err, core.ErrUnknownStream), errors.Is(err, stream.ErrConflict), errors.Is(err, stream.ErrEncode):
		return err.Error(), exitUsage
	case errors.As(err, new(*interruptedError)):
		return err.Error(), exitFailure
	case errors.Is(err, context.Canceled):
		return "interrupted: " + err.Error(), exitFailure
	}
	return err.Error(), exitFailure
}

// redisCause returns the server's own error text inside err.
func redisCause(err error) string {
	var re redis.Error
	if errors.As(err, &re) {
		return re.Error()
	}
	return err.Error()
}

// dialCause returns why a connection could not be made, without repeating the
// address: "connect: connection refused", "lookup x: no such host".
func dialCause(err error) string {
	var op *net.OpError
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return fmt.Sprintf("no answer within %s", pingTimeout)
	case errors.As(err, &op) && op.Err != nil:
		return op.Err.Error()
	}
	return err.Error()
}
