package rdb

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// Joins and global tables read tables from outside their processor: a
// join reads the values of a batch's keys in one round trip (TableMGet); a
// global table loads every partition (TableScan after ChangeLogEnds) and
// then follows the tables' change logs (ReadChanges), whose entries
// table_commit.lua appends with the writes they describe.

// TableMGet returns, for each group i, the values of keys[i] in the table
// hash hashes[i] (HMGET), and whether each key has one: one command for one
// group, one pipelined round trip for several.
func TableMGet(ctx context.Context, c redis.UniversalClient, hashes []string, keys [][]string) (values [][][]byte, ok [][]bool, err error) {
	cmds := make([]*redis.SliceCmd, len(hashes))
	if len(hashes) == 1 {
		cmds[0] = c.HMGet(ctx, hashes[0], keys[0]...)
	} else {
		pipe := c.Pipeline()
		for i, h := range hashes {
			cmds[i] = pipe.HMGet(ctx, h, keys[i]...)
		}
		_, _ = pipe.Exec(ctx) // each command's error is its own
	}
	values, ok = make([][][]byte, len(hashes)), make([][]bool, len(hashes))
	for i, cmd := range cmds {
		got, err := cmd.Result()
		if err != nil {
			return nil, nil, err
		}
		values[i], ok[i] = make([][]byte, len(got)), make([]bool, len(got))
		for j, v := range got {
			if s, isStr := v.(string); isStr {
				values[i][j], ok[i][j] = []byte(s), true
			}
		}
	}
	return values, ok, nil
}

// Change is one change of a table's key, as a change log records it: Value
// set, or the key deleted.
type Change struct {
	Key    string
	Value  []byte
	Delete bool
}

// EncodeChanges encodes a commit's changes of one table as a change log
// entry's "c" field holds them: for each, the byte 's' (set) or 'd'
// (delete), the key's length as an unsigned varint and the key, then, for
// a set, the value's length and the value.
func EncodeChanges(changes []Change) []byte {
	n := 0
	for _, c := range changes {
		n += 1 + 2*binary.MaxVarintLen64 + len(c.Key) + len(c.Value)
	}
	b := make([]byte, 0, n)
	for _, c := range changes {
		if c.Delete {
			b = append(b, 'd')
			b = binary.AppendUvarint(b, uint64(len(c.Key)))
			b = append(b, c.Key...)
			continue
		}
		b = append(b, 's')
		b = binary.AppendUvarint(b, uint64(len(c.Key)))
		b = append(b, c.Key...)
		b = binary.AppendUvarint(b, uint64(len(c.Value)))
		b = append(b, c.Value...)
	}
	return b
}

// DecodeChanges decodes what EncodeChanges encoded.
func DecodeChanges(b []byte) ([]Change, error) {
	var out []Change
	field := func() ([]byte, error) {
		n, w := binary.Uvarint(b)
		if w <= 0 || n > uint64(len(b)-w) {
			return nil, errors.New("change log entry: truncated")
		}
		v := b[w : w+int(n)]
		b = b[w+int(n):]
		return v, nil
	}
	for len(b) > 0 {
		op := b[0]
		b = b[1:]
		k, err := field()
		if err != nil {
			return nil, err
		}
		switch op {
		case 'd':
			out = append(out, Change{Key: string(k), Delete: true})
		case 's':
			v, err := field()
			if err != nil {
				return nil, err
			}
			out = append(out, Change{Key: string(k), Value: v})
		default:
			return nil, fmt.Errorf("change log entry: unknown operation %q", op)
		}
	}
	return out, nil
}

// NoChanges is the ID a change log's first entry names as the one before
// it, and ChangeLogEnds' answer for a log without entries.
const NoChanges = "0-0"

// ChangeLogEnds returns the ID of the last entry of each change log
// (XREVRANGE + - COUNT 1, pipelined), NoChanges for a log without any.
func ChangeLogEnds(ctx context.Context, c redis.UniversalClient, logs []string) ([]string, error) {
	pipe := c.Pipeline()
	cmds := make([]*redis.XMessageSliceCmd, len(logs))
	for i, l := range logs {
		cmds[i] = pipe.XRevRangeN(ctx, l, "+", "-", 1)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return nil, err
	}
	out := make([]string, len(logs))
	for i, cmd := range cmds {
		out[i] = NoChanges
		if m := cmd.Val(); len(m) > 0 {
			out[i] = m[0].ID
		}
	}
	return out, nil
}

// ChangeEntry is one entry of a change log: the log's index in the call's
// list, its ID, the ID of the entry before it (Prev) and its encoded
// changes.
type ChangeEntry struct {
	Log     int
	ID      string
	Prev    string
	Changes []byte
}

// ReadChanges returns up to count entries of each log after the ID
// after[i]. On one node it is one XREAD that blocks up to block while no
// log has any; on Redis Cluster, where the logs live in different slots,
// one XREAD per log, pipelined, that does not block (the caller polls).
func ReadChanges(ctx context.Context, c redis.UniversalClient, logs, after []string, count int64, block time.Duration) ([]ChangeEntry, error) {
	var streams [][]redis.XStream
	if IsCluster(c) {
		pipe := c.Pipeline()
		cmds := make([]*redis.XStreamSliceCmd, len(logs))
		for i, l := range logs {
			cmds[i] = pipe.XRead(ctx, &redis.XReadArgs{Streams: []string{l, after[i]}, Count: count, Block: -1})
		}
		_, _ = pipe.Exec(ctx) // each command's error is its own
		for _, cmd := range cmds {
			if err := cmd.Err(); err != nil && !errors.Is(err, redis.Nil) {
				return nil, err
			}
			streams = append(streams, cmd.Val())
		}
	} else {
		args := append(append(make([]string, 0, 2*len(logs)), logs...), after...)
		res, err := c.XRead(ctx, &redis.XReadArgs{Streams: args, Count: count, Block: block}).Result()
		if errors.Is(err, redis.Nil) {
			return nil, nil
		}
		if err != nil {
			return nil, err
		}
		streams = append(streams, res)
	}
	index := make(map[string]int, len(logs))
	for i, l := range logs {
		index[l] = i
	}
	var out []ChangeEntry
	for _, res := range streams {
		for _, s := range res {
			for _, m := range s.Messages {
				prev, _ := m.Values["prev"].(string)
				data, _ := m.Values["c"].(string)
				out = append(out, ChangeEntry{Log: index[s.Stream], ID: m.ID, Prev: prev, Changes: []byte(data)})
			}
		}
	}
	return out, nil
}
