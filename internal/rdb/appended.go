// Recent rates: counts of a stream's recent entries by time, from their
// IDs (appended.lua), and the finished-task counters of queues by bucket,
// for the rates the HTTP API reports.

package rdb

import (
	"context"
	_ "embed"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

var (
	//go:embed appended.lua
	appendedSrc string
	appended    = redis.NewScript(appendedSrc)
)

// PartitionAppended is what appended.lua counted in one partition.
type PartitionAppended struct {
	Capped bool    // more entries in the window than were read
	Oldest int64   // the oldest entry read, Unix ms (-1: none)
	Counts []int64 // per bucket, oldest first; exact from Oldest on
}

// Appended counts the entries appended to each partition stream of keys in
// the n buckets of width ending at the server's time now, reading at most
// limit entries of each (see appended.lua), one script per partition on a
// Cluster, per 64 partitions otherwise, in one pipeline. It returns the
// server time the buckets end at.
func Appended(ctx context.Context, c redis.UniversalClient, keys []string, width time.Duration, n, limit int) (time.Time, []PartitionAppended, error) {
	batch := 64
	if _, single := c.(*redis.Client); !single {
		batch = 1
	}
	run := func() ([]*redis.Cmd, error) {
		pipe := c.Pipeline()
		var cmds []*redis.Cmd
		for from := 0; from < len(keys); from += batch {
			cmds = append(cmds, appended.Run(ctx, pipe, keys[from:min(from+batch, len(keys))], width.Milliseconds(), n, limit))
		}
		_, err := pipe.Exec(ctx)
		return cmds, err
	}
	cmds, err := run()
	if IsNoScript(err) {
		if err := appended.Load(ctx, c).Err(); err != nil {
			return time.Time{}, nil, err
		}
		cmds, err = run()
	}
	if err != nil {
		return time.Time{}, nil, err
	}
	var now int64
	out := make([]PartitionAppended, 0, len(keys))
	for _, cmd := range cmds {
		v, _ := cmd.Result()
		top, ok := v.([]any)
		if !ok || len(top) != 2 {
			return time.Time{}, nil, fmt.Errorf("appended: unexpected reply %v", v)
		}
		t, _ := top[0].(int64)
		now = max(now, t)
		parts, _ := top[1].([]any)
		for _, p := range parts {
			row, _ := p.([]any)
			if len(row) != 2+n {
				return time.Time{}, nil, fmt.Errorf("appended: unexpected row %v", p)
			}
			pa := PartitionAppended{Counts: make([]int64, n)}
			capped, _ := row[0].(int64)
			pa.Capped = capped == 1
			pa.Oldest, _ = row[1].(int64)
			for b := range n {
				pa.Counts[b], _ = row[2+b].(int64)
			}
			out = append(out, pa)
		}
	}
	if len(out) != len(keys) {
		return time.Time{}, nil, fmt.Errorf("appended: %d rows for %d partitions", len(out), len(keys))
	}
	return time.UnixMilli(now), out, nil
}

// FinishedSeries reads the finished-task counters of each queue whose
// counter prefix (KeySpace.TaskFinishedPrefix) is in prefixes, for the n
// buckets (FinishedBucket) ending with the current one at the server's
// time: one MGET per queue (its counters share its slot), in one pipeline
// after a TIME. It returns the server time and the counts, oldest first.
func FinishedSeries(ctx context.Context, c redis.UniversalClient, prefixes []string, n int) (time.Time, [][]int64, error) {
	now, err := ServerTime(ctx, c)
	if err != nil {
		return time.Time{}, nil, err
	}
	width := int64(FinishedBucket / time.Second)
	cur := now.Unix() / width
	pipe := c.Pipeline()
	cmds := make([]*redis.SliceCmd, len(prefixes))
	for i, p := range prefixes {
		keys := make([]string, n)
		for b := range n {
			keys[b] = p + strconv.FormatInt(cur-int64(n-1-b), 10)
		}
		cmds[i] = pipe.MGet(ctx, keys...)
	}
	if len(prefixes) > 0 {
		if _, err := pipe.Exec(ctx); err != nil {
			return time.Time{}, nil, err
		}
	}
	out := make([][]int64, len(prefixes))
	for i, cmd := range cmds {
		out[i] = make([]int64, n)
		for b, v := range cmd.Val() {
			if s, ok := v.(string); ok {
				out[i][b], _ = strconv.ParseInt(s, 10, 64)
			}
		}
	}
	return now, out, nil
}
