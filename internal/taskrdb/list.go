package taskrdb

import (
	"context"
	_ "embed"
	"fmt"
	"strconv"

	"github.com/redis/go-redis/v9"
)

//go:embed list.lua
var listSrc string

var list = script("list.lua", listSrc)

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
	Fields map[string]string // the task's hash (see common.lua)
}

// List reads at most limit tasks of a set (SetDead, SetDone or
// SetScheduled) with their hashes (list.lua): one ranged read of the set
// and one HGETALL per task, never a scan.
//
// KEYS: Keys. ARGV: set, limit.
func List(ctx context.Context, c redis.Scripter, k []string, set string, limit int) ([]Listed, error) {
	v, err := list.Run(ctx, c, k, set, limit).Slice()
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
		flat, _ := v[i+2].([]any)
		m := make(map[string]string, len(flat)/2)
		for j := 0; j+1 < len(flat); j += 2 {
			m[toString(flat[j])] = toString(flat[j+1])
		}
		out = append(out, Listed{ID: toString(v[i]), Score: int64(score), Fields: m})
	}
	return out, nil
}
