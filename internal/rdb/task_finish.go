// Finish: finish.lua records how runs of tasks ended (succeeded, retried,
// dead, failed, cancelled, handed back or snoozed), many at once on a
// pipeline.

package rdb

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
// KEYS: Keys, then the hash of each task (Keys' task hash prefix and its
// ID), in the order of outs. ARGV: consumer, dead max, dead age ms, then
// id, level, entry, outcome, data, delay ms per task.
func FinishCmd(ctx context.Context, c redis.Scripter, k []string, consumer string, deadMax int, deadAge time.Duration, outs []Outcome) *redis.Cmd {
	hashes := make([]string, len(outs))
	for i, o := range outs {
		hashes[i] = k[0] + o.ID
	}
	k = taskKeys(k, hashes...)
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

// FinishReplies are the replies of the finish.lua calls of FinishAll, one
// per call of up to its per outcomes.
type FinishReplies []*redis.Cmd

// States returns the states of call i's outcomes (see FinishCmd), nil when
// its reply is not a list.
func (r FinishReplies) States(i int) []string {
	s, _ := r[i].StringSlice()
	return s
}

// FinishAll records outcomes on one pipeline, per outcomes a finish.lua
// call (FinishCmd). When the server does not have the script (a restarted
// server: nothing ran), it loads the scripts (Load) and sends the pipeline
// once more.
func FinishAll(ctx context.Context, c redis.UniversalClient, k []string, consumer string, deadMax int, deadAge time.Duration, outs []Outcome, per int) (FinishReplies, error) {
	var lastErr error
	for try := 0; try < 2; try++ {
		pipe := c.Pipeline()
		var cmds []*redis.Cmd
		for i := 0; i < len(outs); i += per {
			cmds = append(cmds, FinishCmd(ctx, pipe, k, consumer, deadMax, deadAge, outs[i:min(i+per, len(outs))]))
		}
		_, lastErr = pipe.Exec(ctx)
		if lastErr == nil {
			return cmds, nil
		}
		if !IsNoScript(lastErr) {
			return nil, lastErr
		}
		if err := LoadTaskScripts(ctx, c); err != nil {
			return nil, err
		}
	}
	return nil, lastErr
}
