package rdb

import (
	"context"
	_ "embed"
	"fmt"
	"strconv"

	"github.com/redis/go-redis/v9"
)

//go:embed task_list.lua
var listSrc string

var list = script("task_list.lua", listSrc)

// The sorted sets List reads.
const (
	SetDead      = "dead"      // dead tasks, the latest death first
	SetDone      = "done"      // retained finished tasks, the latest end of retention first
	SetScheduled = "scheduled" // delayed and retrying tasks, the soonest due first
)

// Listed is one task read by List.
type Listed struct {
	ID     string
	Score  int64             // the set's score: Unix milliseconds
	Fields map[string]string // the fields of the task's hash read (see common.lua); absent ones are left out
}

// ListFields are the fields of a task's hash List reads: its status
// without payload, progress, result, headers or webhook.
var ListFields = []string{"s", "a", "r", "l", "k", "err", "w", "e", "d", "st", "f", "to", "ret", "c"}

// List reads at most limit tasks of a set (SetDead, SetDone or
// SetScheduled) with the fields of their hashes (list.lua): one ranged
// read of the set and one HMGET per task, never a scan. fields must start
// with the state ("s"); the error ("err"), when asked, comes back cut to
// errMax bytes (so a cut may end in the middle of a UTF-8 sequence).
//
// KEYS: Keys. ARGV: set, limit, errMax, fields...
func List(ctx context.Context, c redis.Scripter, k []string, set string, limit, errMax int, fields []string) ([]Listed, error) {
	if len(fields) == 0 || fields[0] != "s" {
		return nil, fmt.Errorf("list: the fields read must start with the state, not %q", fields)
	}
	args := make([]any, 0, 3+len(fields))
	args = append(args, set, limit, errMax)
	for _, f := range fields {
		args = append(args, f)
	}
	v, err := list.Run(ctx, c, k, args...).Slice()
	if err != nil {
		return nil, err
	}
	if len(v)%3 != 0 {
		return nil, fmt.Errorf("list: reply of %d values is not a multiple of 3", len(v))
	}
	out := make([]Listed, 0, len(v)/3)
	for i := 0; i < len(v); i += 3 {
		score, err := strconv.ParseFloat(toString(v[i+1]), 64)
		if err != nil {
			return nil, fmt.Errorf("list: score of task %s: %w", toString(v[i]), err)
		}
		vals, _ := v[i+2].([]any)
		if len(vals) != len(fields) {
			return nil, fmt.Errorf("list: task %s: %d values for %d fields", toString(v[i]), len(vals), len(fields))
		}
		m := make(map[string]string, len(fields))
		for j, f := range fields {
			if vals[j] != nil {
				m[f] = toString(vals[j])
			}
		}
		out = append(out, Listed{ID: toString(v[i]), Score: int64(score), Fields: m})
	}
	return out, nil
}
