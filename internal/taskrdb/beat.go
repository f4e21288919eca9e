package taskrdb

import (
	"context"
	_ "embed"
	"time"

	"github.com/leatdev/leat/internal/scripts"
	"github.com/redis/go-redis/v9"
)

var (
	//go:embed beat.lua
	beatSrc    string
	beatScript = redis.NewScript(scripts.Describe("task queue beat.lua", beatSrc))
)

// ForgetWorkers is how long a worker that stopped beating without leaving
// (it died) stays in a queue's workers set (keys.Space.TaskWorkers).
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
