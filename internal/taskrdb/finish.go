// Finish: finish.lua records how runs of tasks ended (succeeded, retried,
// dead, failed, cancelled, handed back or snoozed), many at once on a
// pipeline.

package taskrdb

import (
	"context"
	"time"

	"github.com/redis/go-redis/v9"
)

// Outcomes of Finish.
const (
	OK        = "ok"
	Retry     = "retry"
	Dead      = "dead"
	Fail      = "fail"
	Cancelled = "cancel"
	Handback  = "handback"
	Snooze    = "snooze"
)

// Outcome is how one run of a task ended.
type Outcome struct {
	ID, Entry string
	Level     int
	Kind      string // OK, Retry, Dead, Fail, Cancelled, Handback or Snooze
	Data      []byte // result (OK) or error text
	Delay     time.Duration
}

// FinishCmd queues finish.lua for outcomes on a pipeline (EVALSHA: load
// it first with Load). Its value is, per outcome, the state the task was
// left in ("succeeded", "retrying", "dead", "failed", "cancelled",
// "pending" for a handback, "scheduled" for a snooze), or "" when the run was no longer the task's
// current one and nothing was recorded.
//
// KEYS: Keys. ARGV: consumer, dead max, dead age ms, then id, level, entry,
// outcome, data, delay ms per task.
func FinishCmd(ctx context.Context, c redis.Scripter, k []string, consumer string, deadMax int, deadAge time.Duration, outs []Outcome) *redis.Cmd {
	args := make([]any, 0, 3+6*len(outs))
	args = append(args, consumer, deadMax, deadAge.Milliseconds())
	for _, o := range outs {
		args = append(args, o.ID, o.Level, o.Entry, o.Kind, o.Data, o.Delay.Milliseconds())
	}
	if _, ok := c.(redis.Pipeliner); ok {
		return finish.EvalSha(ctx, c, k, args...)
	}
	return finish.Run(ctx, c, k, args...)
}
