package rdb

import (
	"context"
	_ "embed"
	"time"

	"github.com/redis/go-redis/v9"
)

var (
	//go:embed task_beat.lua
	beatSrc    string
	beatScript = redis.NewScript(Describe("task_beat.lua", beatSrc))
)

// ForgetWorkers is how long a worker that stopped beating without leaving
// (it died) stays in a queue's workers set (KeySpace.TaskWorkers).
const ForgetWorkers = 10 * time.Minute

// BeatCmd queues on pipe the beat of worker in a queue's workers set
// (beat.lua, by SHA: run LoadBeat first, and again after NOSCRIPT).
//
// KEYS: the workers set. ARGV: worker, ForgetWorkers ms.
func BeatCmd(ctx context.Context, pipe redis.Pipeliner, workers, worker string) *redis.Cmd {
	return beatScript.EvalSha(ctx, pipe, []string{workers}, worker, ForgetWorkers.Milliseconds())
}

// LoadBeat loads beat.lua.
func LoadBeat(ctx context.Context, c redis.Scripter) error { return beatScript.Load(ctx, c).Err() }

// A Beater is a worker that beats in a queue's workers set.
type Beater struct {
	Workers string // the queue's workers set (KeySpace.TaskWorkers)
	Worker  string
}

// Beat beats for each of bs in one pipeline on c (BeatCmd), loading
// beat.lua and sending the pipeline once more when the server does not
// have it.
func Beat(ctx context.Context, c redis.UniversalClient, bs []Beater) error {
	for try := 0; ; try++ {
		pipe := c.Pipeline()
		for _, b := range bs {
			BeatCmd(ctx, pipe, b.Workers, b.Worker)
		}
		_, err := pipe.Exec(ctx)
		if try > 0 || !IsNoScript(err) {
			return err
		}
		if err := LoadBeat(ctx, c); err != nil {
			return err
		}
	}
}

// LeaveWorkers removes worker from the workers set workers (ZREM): it
// stopped.
func LeaveWorkers(ctx context.Context, c redis.Cmdable, workers, worker string) error {
	return c.ZRem(ctx, workers, worker).Err()
}
