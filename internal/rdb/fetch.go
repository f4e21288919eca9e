package rdb

import (
	"context"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// The fetcher's commands (executor/fetch_*.go): the blocking read over idle
// partitions and CLIENT UNBLOCK, which ends it; the fenced reads of new
// entries in a transaction; the scripted reads (fetch.lua) in one pipeline;
// the probes of a failing Cluster node. The fetcher decides what to read
// and when; these send it, each in the round trips its comment names.

// ClientID returns the id of conn (CLIENT ID), for Unblock.
func ClientID(ctx context.Context, conn *redis.Conn) (int64, error) {
	return conn.ClientID(ctx).Result()
}

// Unblock ends the blocking command of the connection whose id is id
// (CLIENT UNBLOCK), on c. It returns 1 when there was one, 0 otherwise
// (id 0, which no connection has, asks whether the user may run it).
func Unblock(ctx context.Context, c redis.UniversalClient, id int64) (int64, error) {
	return c.ClientUnblock(ctx, id).Result()
}

// BlockingRead is a blocking XREAD on a connection: it reuses its command's
// arguments and reply buffer from one read to the next (an idle fetcher
// wakes often). The zero value is ready.
type BlockingRead struct {
	args  []any
	reply ReplyBuffer
}

// maxBlockReply bounds the reply buffer a BlockingRead keeps between reads.
const maxBlockReply = 1 << 20

// Wait sends XREAD COUNT 1 BLOCK block STREAMS keys... last... on conn,
// which waits up to block for entries after last in any of keys (strings),
// and calls got with the index in keys of each that has some. The reply is
// read raw (EachRawStream): a wake-up does not parse the entries it
// saw.
//
// then, when not nil, queues commands right behind the blocking read on
// conn, in the same write: Redis runs them as soon as the blocking read
// returns, and their replies come with its reply.
func (r *BlockingRead) Wait(ctx context.Context, conn *redis.Conn, keys, last []any, block time.Duration, got func(i int), then func(p Processor)) error {
	r.args = append(r.args[:0], "XREAD", "COUNT", 1, "BLOCK", block.Milliseconds(), "STREAMS")
	r.args = append(append(r.args, keys...), last...)
	if r.reply.Cap() > maxBlockReply {
		r.reply = ReplyBuffer{}
	}
	r.reply.Reset()
	read := redis.NewRawWriteToCmd(ctx, &r.reply, r.args...)
	var err error
	if then == nil {
		err = conn.Process(ctx, read)
	} else {
		_, err = conn.Pipelined(ctx, func(p redis.Pipeliner) error {
			_ = p.Process(ctx, read)
			then(p)
			return nil
		})
	}
	if err != nil {
		return err
	}
	next := 0 // the reply names the streams in the order asked
	return EachRawStream(r.reply.Bytes(), func(key []byte) {
		for n := range keys {
			if i := (next + n) % len(keys); keys[i].(string) == string(key) {
				got(i)
				next = i + 1
				return
			}
		}
	})
}

// WatchLocks watches the lock keys locks on conn and returns their values,
// in one round trip (WATCH locks...; MGET locks...): a value is the
// holder's string, or nil for a lock that is gone. ExecWatched then runs
// commands only if no lock changed meanwhile; Unwatch gives up.
func WatchLocks(ctx context.Context, conn *redis.Conn, locks []string) ([]any, error) {
	watch := make([]any, 0, len(locks)+1)
	watch = append(watch, "WATCH")
	for _, l := range locks {
		watch = append(watch, l)
	}
	var owners *redis.SliceCmd
	_, err := conn.Pipelined(ctx, func(p redis.Pipeliner) error {
		p.Do(ctx, watch...)
		owners = p.MGet(ctx, locks...)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return owners.Val(), nil
}

// Unwatch ends the watch of WatchLocks on conn (UNWATCH).
func Unwatch(ctx context.Context, conn *redis.Conn) error {
	return conn.Do(ctx, "UNWATCH").Err()
}

// ExecWatched runs the commands queue queues in one transaction on conn, in
// one round trip (MULTI; ...; EXEC), which Redis executes only if none of
// the keys conn watches (WatchLocks) changed: otherwise it fails with
// redis.TxFailedErr. EXEC ends the watch, executed or not. When Redis
// refused a command as it was queued it executes none and the error is
// EXECABORT (IsExecAbort).
func ExecWatched(ctx context.Context, conn *redis.Conn, queue func(p redis.Pipeliner)) error {
	_, err := conn.TxPipelined(ctx, func(p redis.Pipeliner) error {
		queue(p)
		return nil
	})
	return err
}

// IsExecAbort reports whether err is Redis's EXECABORT reply.
func IsExecAbort(err error) bool {
	return err != nil && strings.HasPrefix(err.Error(), "EXECABORT")
}

// QueueReadNew queues on p a read of up to count new entries of the stream
// key for consumer of group (XREADGROUP ... STREAMS key >), as a raw
// command (OnceCmd: parsed in place with EachRawEntry,
// never sent twice), and, when tail is true, a read of the stream's last
// entry (XREVRANGE key + - COUNT 1; nil otherwise).
func QueueReadNew(ctx context.Context, p redis.Pipeliner, group, consumer, key string, count int, tail bool) (OnceCmd, *redis.XMessageSliceCmd) {
	read := NewOnceCmd(ctx, "XREADGROUP", "GROUP", group, consumer, "COUNT", count, "STREAMS", key, ">")
	_ = p.Process(ctx, read)
	if !tail {
		return read, nil
	}
	return read, p.XRevRangeN(ctx, key, "+", "-", 1)
}

// Runner runs a command at once (a client or a connection) or in a
// pipeline.
type Runner interface {
	Processor
	Pipeline() redis.Pipeliner
}

// FetchEvents runs n fenced reads (FetchRaw, fetch.lua) on c in one
// pipelined round trip, or a single one without a pipeline: queue(p, j)
// runs or queues the jth on p and returns it. It returns the round trip's
// error; each read's own comes out of its parse (ParseRawFetch).
func FetchEvents(ctx context.Context, c Runner, n int, queue func(p Processor, j int) *RawFetch) error {
	if n == 1 {
		return queue(c, 0).Err()
	}
	pipe := c.Pipeline()
	for j := range n {
		queue(pipe, j)
	}
	_, err := pipe.Exec(ctx)
	return err
}

// Probe asks whether each of keys exists (EXISTS), in one pipeline (on
// Cluster, one round trip to each master), for the answer only: errs[i] is
// nil when the node of keys[i] answered.
func Probe(ctx context.Context, c redis.UniversalClient, keys []string) (errs []error) {
	cmds := make([]*redis.IntCmd, len(keys))
	pipe := c.Pipeline()
	for i, k := range keys {
		cmds[i] = pipe.Exists(ctx, k)
	}
	_, _ = pipe.Exec(ctx) // per command below
	errs = make([]error, len(keys))
	for i, cmd := range cmds {
		errs[i] = cmd.Err()
	}
	return errs
}
