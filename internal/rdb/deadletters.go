package rdb

import (
	"context"
	_ "embed"
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// The dead letters of a processor: the stream its DeadLetter policy writes
// (keys.DeadLetter), read in pages, replayed into the partitions and
// deleted. Every key is named by the caller.

// ReplayMarkTTL is how long a replay marker outlives the deletion of its
// dead letter: a concurrent replay that read the dead letter before it was
// deleted finds the marker, and adds nothing, for that long.
const ReplayMarkTTL = 24 * time.Hour

//go:embed dead_replay.lua
var deadReplaySrc string

var deadReplay = redis.NewScript(deadReplaySrc)

// DeadLengths returns the length of each dead-letter stream of keys (XLEN,
// O(1) each), in one pipelined round trip; 0 for a missing key.
func DeadLengths(ctx context.Context, c redis.UniversalClient, keys []string) ([]int64, error) {
	if len(keys) == 0 {
		return nil, nil
	}
	pipe := c.Pipeline()
	cmds := make([]*redis.IntCmd, len(keys))
	for i, k := range keys {
		cmds[i] = pipe.XLen(ctx, k)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return nil, err
	}
	out := make([]int64, len(keys))
	for i, cmd := range cmds {
		out[i] = cmd.Val()
	}
	return out, nil
}

// DeadRange returns at most limit dead letters of key, oldest first, after
// the ID after ("" for the start) (XRANGE key (after + COUNT limit).
func DeadRange(ctx context.Context, c redis.UniversalClient, key, after string, limit int) ([]redis.XMessage, error) {
	start := "-"
	if after != "" {
		start = "(" + after
	}
	return c.XRangeN(ctx, key, start, "+", int64(limit)).Result()
}

// DeadEntry returns dead letter id of key (XRANGE key id id), and whether
// it exists.
func DeadEntry(ctx context.Context, c redis.UniversalClient, key, id string) (redis.XMessage, bool, error) {
	msgs, err := c.XRange(ctx, key, id, id).Result()
	if err != nil || len(msgs) == 0 {
		return redis.XMessage{}, false, err
	}
	return msgs[0], true, nil
}

// DeadLast returns the ID of the latest dead letter of key, "" when there
// is none (XREVRANGE key + - COUNT 1).
func DeadLast(ctx context.Context, c redis.UniversalClient, key string) (string, error) {
	msgs, err := c.XRevRangeN(ctx, key, "+", "-", 1).Result()
	if err != nil || len(msgs) == 0 {
		return "", err
	}
	return msgs[0].ID, nil
}

// DeleteDeadLetters deletes the dead letters ids of key (XDEL) and returns how
// many existed.
func DeleteDeadLetters(ctx context.Context, c redis.UniversalClient, key string, ids ...string) (int64, error) {
	if len(ids) == 0 {
		return 0, nil
	}
	return c.XDel(ctx, key, ids...).Result()
}

// DeleteDeadThrough deletes every dead letter of key up to and including
// id (XTRIM key MINID id+1, exact) and returns how many it deleted: the
// letters written after id stay.
func DeleteDeadThrough(ctx context.Context, c redis.UniversalClient, key, id string) (int64, error) {
	next, err := nextID(id)
	if err != nil {
		return 0, err
	}
	return c.XTrimMinID(ctx, key, next).Result()
}

// nextID returns the stream ID right after id ("ms-seq").
func nextID(id string) (string, error) {
	ms, seq, ok := strings.Cut(id, "-")
	m, err1 := strconv.ParseUint(ms, 10, 64)
	s, err2 := strconv.ParseUint(seq, 10, 64)
	if !ok || err1 != nil || err2 != nil {
		return "", errors.New("rdb: malformed stream ID " + strconv.Quote(id))
	}
	if s == ^uint64(0) {
		return strconv.FormatUint(m+1, 10) + "-0", nil
	}
	return ms + "-" + strconv.FormatUint(s+1, 10), nil
}

// ReplayDead moves dead letter deadID of deadKey into partition, once even
// when run twice, concurrently, or again after a crash in any step: the
// partition and the dead letters may be in different Cluster slots, so the
// move is three steps.
//
//  1. dead_replay.lua, in the partition's slot: unless the replay marker
//     exists, XADD the fields to the partition (MAXLEN ~ size) and SET the
//     marker to the new entry's ID, in one script.
//  2. XDEL deadID from deadKey.
//  3. PEXPIRE the marker ReplayMarkTTL.
//
// A run stopped after step 1 is completed by the next, whose step 1 finds
// the marker and adds nothing. It returns the ID of the partition entry.
func ReplayDead(ctx context.Context, c redis.UniversalClient, partition, mark string, size int64, fields []any, deadKey, deadID string) (string, error) {
	argv := append([]any{size}, fields...)
	id, err := deadReplay.Run(ctx, c, []string{partition, mark}, argv...).Text()
	if err != nil {
		return "", err
	}
	if err := c.XDel(ctx, deadKey, deadID).Err(); err != nil {
		return id, err
	}
	return id, c.PExpire(ctx, mark, ReplayMarkTTL).Err()
}
