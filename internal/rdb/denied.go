package rdb

import (
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"
)

// A Redis user whose ACL lacks a command or a key gets NOPERM errors that
// do not say what to grant, and a Lua script that calls a command the user
// may not run fails with an error that names neither the command nor the
// script ("The user executing the script can't run this command or
// subcommand script: SHA"). Explain turns them into errors that say what
// leat needs.

// scriptInfo names a script and the commands it calls.
type scriptInfo struct {
	name     string
	commands []string
}

var (
	scriptCall = regexp.MustCompile(`redis\.p?call\('([A-Za-z]+)'`)
	scriptSHA  = regexp.MustCompile(`script: ([0-9a-f]{40})`)
	deniedCmd  = regexp.MustCompile(`no permissions to run the '([^']+)' command`)

	// bySHA maps the SHA1 of each script's source to what it is.
	bySHA = func() map[string]scriptInfo {
		m := map[string]scriptInfo{}
		for name, src := range map[string]string{
			"background_record": backgroundRecordSrc, "mw_rate": mwRateSrc, "register_stream": registerStreamSrc,
			"fetch": fetchSrc, "heartbeat": heartbeatSrc, "live_members": liveMembersSrc, "lock_acquire": lockAcquireSrc,
			"lock_refresh": lockRefreshSrc, "lock_release": lockReleaseSrc, "store_assignment": storeAssignmentSrc,
			"alive": aliveSrc, "delete_consumers": deleteConsumersSrc, "set_deliveries": setDeliveriesSrc,
			"set_group": setGroupSrc,
		} {
			sha, info := describe(name+".lua", src)
			m[sha] = info
		}
		return m
	}()

	// described holds the scripts of other packages (Describe): SHA1 ->
	// scriptInfo.
	described sync.Map
)

// describe returns the SHA1 of src and what it is.
func describe(name, src string) (string, scriptInfo) {
	var cmds []string
	for _, c := range scriptCall.FindAllStringSubmatch(src, -1) {
		cmds = append(cmds, strings.ToLower(c[1]))
	}
	slices.Sort(cmds)
	sum := sha1.Sum([]byte(src))
	return hex.EncodeToString(sum[:]), scriptInfo{name: name, commands: slices.Compact(cmds)}
}

// Describe records src, the source of a Lua script of another package (the
// task queue's), under name, so that Explain names the script and its
// commands when the Redis user may not run one of them. It returns src.
func Describe(name, src string) string {
	sha, info := describe(name, src)
	described.Store(sha, info)
	return src
}

// lookup returns what the script of SHA1 sha is.
func lookup(sha string) (scriptInfo, bool) {
	if info, ok := bySHA[sha]; ok {
		return info, true
	}
	if v, ok := described.Load(sha); ok {
		return v.(scriptInfo), true
	}
	return scriptInfo{}, false
}

// DeniedError is a Redis permission error with what to grant. Its message
// starts with the server's; it is a redis.Error like the server's reply.
type DeniedError struct {
	err  error
	hint string
}

func (e *DeniedError) Error() string { return e.err.Error() + " — " + e.hint }
func (e *DeniedError) Unwrap() error { return e.err }

// RedisError marks it as the server's reply (redis.Error).
func (e *DeniedError) RedisError() {}

// Explain returns err with what the Redis user must be granted when err is
// a permission error (NOPERM, or a script calling a command the user may not
// run), for keys under prefix; other errors are returned as they are.
func Explain(err error, prefix string) error {
	if err == nil || errors.As(err, new(*DeniedError)) {
		return err
	}
	msg := err.Error()
	var hint string
	switch {
	case strings.Contains(msg, "NOPERM") && strings.Contains(msg, "access one of the keys"):
		hint = fmt.Sprintf("the Redis user may not access keys %s:...: grant it ~%s:* (or set --prefix, Config.KeyPrefix, to a prefix it may access)", prefix, prefix)
	case strings.Contains(msg, "NOPERM") && strings.Contains(msg, "access one of the channels"):
		hint = fmt.Sprintf("the Redis user may not use the channels %s:...: grant it &%s:* (task cancellations are published there)", prefix, prefix)
	case strings.Contains(msg, "NOPERM"):
		cmd := "the command"
		if m := deniedCmd.FindStringSubmatch(msg); m != nil {
			cmd = m[1]
		}
		hint = fmt.Sprintf("the Redis user may not run %s, which leat needs: grant it +%s (see the minimal ACL in leat's docs/configuration.md)", strings.ToUpper(cmd), cmd)
	case strings.Contains(msg, "can't run this command or subcommand"):
		info, ok := scriptInfo{}, false
		if m := scriptSHA.FindStringSubmatch(msg); m != nil {
			info, ok = lookup(m[1])
		}
		if !ok {
			hint = "the Redis user may not run a command that one of leat's Lua scripts calls (see the minimal ACL in leat's docs/configuration.md)"
			break
		}
		grant := make([]string, len(info.commands))
		for i, c := range info.commands {
			grant[i] = "+" + c
		}
		hint = fmt.Sprintf("leat's Lua script %s calls %s, and the Redis user may not run one of them: grant it %s "+
			"(TIME is in ACL category @fast; see the minimal ACL in leat's docs/configuration.md)",
			info.name, strings.ToUpper(strings.Join(info.commands, ", ")), strings.Join(grant, " "))
	default:
		return err
	}
	return &DeniedError{err: err, hint: hint}
}
