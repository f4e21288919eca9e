package rdb

import (
	"context"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// TableWrite is one change to a table's hash: Value set at Field, or the
// field deleted when Delete; or, with TTL, to a string key: Table set to
// Value, expiring after TTL (Field unused); or, with Log, an entry of a
// table's change log: Table the log (KeySpace.TableChanges), Value the
// encoded changes (EncodeChanges), Log its MAXLEN (Field unused).
type TableWrite struct {
	Table  string // the table's hash, or the string key
	Field  string
	Value  []byte
	Delete bool
	TTL    time.Duration
	Log    int64
}

// CommitTables applies writes and acknowledges ids (entries of group in
// stream) in one step, if lock still holds value; it reports whether it
// did (false: nothing applied).
//
// KEYS: lock, stream, the tables and keys written. ARGV: value, group,
// len(ids), ids, then a triple per write (see table_commit.lua).
func CommitTables(ctx context.Context, c redis.Scripter, lock, value, stream, group string, ids []string, writes []TableWrite) (bool, error) {
	keys := []string{lock, stream}
	index := map[string]string{}
	args := make([]any, 0, 3+len(ids)+3*len(writes))
	args = append(args, value, group, len(ids))
	for _, id := range ids {
		args = append(args, id)
	}
	for _, w := range writes {
		i, ok := index[w.Table]
		if !ok {
			keys = append(keys, w.Table)
			i = strconv.Itoa(len(keys))
			index[w.Table] = i
		}
		field, op := w.Field, byte('s')
		switch {
		case w.TTL > 0:
			field, op = strconv.FormatInt(max(w.TTL.Milliseconds(), 1), 10), 'p'
		case w.Log > 0: // a change log's entry
			field, op = strconv.FormatInt(w.Log, 10), 'l'
		case w.Delete:
			op = 'd'
		}
		v := append(make([]byte, 0, 1+len(w.Value)), op)
		if op != 'd' {
			v = append(v, w.Value...)
		}
		args = append(args, i, field, v)
	}
	n, err := tableCommit.Run(ctx, c, keys, args...).Int64()
	return n == 1, err
}
