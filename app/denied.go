package app

import (
	"context"
	"errors"
	"fmt"

	"github.com/leatdev/leat/internal/rdb"
	"github.com/redis/go-redis/v9"
)

// deniedHook says what to grant in the permission errors (NOPERM, and Lua
// scripts calling a command the user may not run) of the client an App
// makes from RedisURL; see rdb.Explain. On a single-server client it
// also turns a MOVED, ASK or CROSSSLOT reply, the sign of a Redis Cluster
// node the App was not told about, into ErrClusterNode. A caller-owned client is
// left as it is: Run explains the error it returns.
type deniedHook struct {
	prefix string
	single bool // a single-server client: redirections are ErrClusterNode
}

// explain returns err with what it means for the App.
func (h deniedHook) explain(err error) error {
	if h.single && isClusterReply(err) && !errors.Is(err, ErrClusterNode) {
		return fmt.Errorf("%w (set Config.Cluster): %w", ErrClusterNode, err)
	}
	return rdb.Explain(err, h.prefix)
}

func (deniedHook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h deniedHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		if err != nil {
			if e := h.explain(err); e != err { //nolint:errorlint // identity: was it wrapped
				cmd.SetErr(e)
				return e
			}
		}
		return err
	}
}

func (h deniedHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		err := next(ctx, cmds)
		if err == nil {
			return nil
		}
		for _, cmd := range cmds {
			if cerr := cmd.Err(); cerr != nil {
				cmd.SetErr(h.explain(cerr))
			}
		}
		return h.explain(err)
	}
}
