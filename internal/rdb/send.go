package rdb

import (
	"context"

	"github.com/redis/go-redis/v9"
)

// Sending entries to a stream's partitions (internal/core builds each
// entry's fields, the guarded sends go through guarded_add.lua).

// XAddArgs starts the command XADD key MAXLEN ~ size *, to which the
// caller appends the entry's field, value list: fields is the room to
// leave for it.
func XAddArgs(key, size any, fields int) []any {
	return append(make([]any, 0, 6+fields), "XADD", key, "MAXLEN", "~", size, "*")
}

// XAdds sends len(cmds) XADD commands, the kth with the arguments args(k)
// (XAddArgs and the entry's fields), and sets cmds[k] to it: one alone
// without a pipeline, more in one pipelined round trip. It returns the
// round trip's error; each command keeps its own.
func XAdds(ctx context.Context, c redis.UniversalClient, cmds []*redis.Cmd, args func(k int) []any) error {
	if len(cmds) == 1 {
		cmds[0] = c.Do(ctx, args(0)...)
		return cmds[0].Err()
	}
	pipe := c.Pipeline()
	for k := range cmds {
		cmds[k] = pipe.Do(ctx, args(k)...)
	}
	_, err := pipe.Exec(ctx)
	return err
}

// Pipelined queues commands on one pipeline of c (queue calls functions of
// this package that take a pipeline) and sends them in one round trip. It
// returns the round trip's error; each command keeps its own.
func Pipelined(ctx context.Context, c redis.UniversalClient, queue func(pipe redis.Pipeliner)) error {
	pipe := c.Pipeline()
	queue(pipe)
	_, err := pipe.Exec(ctx)
	return err
}
