// Package taskrdb holds the Redis side of the task queue: every command,
// pipeline and Lua script of package task, each behind a function named for
// what it does (task passes its clients through). The scripts of a queue's
// tasks take the same KEYS, the queue's keys in the order of [Keys] (all in
// the queue's hash slot), and start with the helpers of common.lua; the
// others (beat.lua, cron.lua, log.lua, update.lua, hookclaim.lua) list
// their own KEYS in their header.
package taskrdb

import (
	"context"
	_ "embed"
	"strconv"
	"strings"

	"github.com/leatdev/leat/internal/keys"
	"github.com/leatdev/leat/internal/scripts"
	"github.com/redis/go-redis/v9"
)

// Group is the consumer group of every ready stream.
const Group = "workers"

var (
	//go:embed common.lua
	commonSrc string

	//go:embed enqueue.lua
	enqueueSrc string
	//go:embed fetch.lua
	fetchSrc string
	//go:embed finish.lua
	finishSrc string
	//go:embed promote.lua
	promoteSrc string
	//go:embed reclaim.lua
	reclaimSrc string
	//go:embed janitor.lua
	janitorSrc string
	//go:embed cancel.lua
	cancelSrc string
	//go:embed requeue.lua
	requeueSrc string
	//go:embed delete.lua
	deleteSrc string

	enqueue = script("enqueue.lua", enqueueSrc)
	fetch   = script("fetch.lua", fetchSrc)
	finish  = script("finish.lua", finishSrc)
	promote = script("promote.lua", promoteSrc)
	reclaim = script("reclaim.lua", reclaimSrc)
	janitor = script("janitor.lua", janitorSrc)
	cancel  = script("cancel.lua", cancelSrc)
	requeue = script("requeue.lua", requeueSrc)
	remove  = script("delete.lua", deleteSrc)
)

// script returns the script of file name, after common.lua; denied
// commands name it (scripts.Describe).
func script(name, src string) *redis.Script {
	return redis.NewScript(scripts.Describe("task queue "+name, commonSrc+"\n"+src))
}

// Keys returns the KEYS of every task script for queue (see common.lua).
func Keys(s keys.Space, queue string) []string {
	return []string{
		s.TaskPrefix(queue), s.TaskStreamPrefix(queue), s.TaskScheduled(queue), s.TaskDead(queue),
		s.TaskDone(queue), s.TaskCounts(queue), s.TaskUniquePrefix(queue), s.TaskKeyPrefix(queue),
		s.TaskKeys(queue), s.TaskWake(queue), s.TaskRatePrefix(queue), s.TaskWebhooks(queue),
		s.TaskFinishedPrefix(queue), s.TaskFetchedPrefix(queue), s.TaskConfig(queue), s.TaskQueueRate(queue),
	}
}

// errText returns err's text, "" for nil.
func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// IsNoScript reports whether err says the server does not know a script.
func IsNoScript(err error) bool { return err != nil && strings.HasPrefix(err.Error(), "NOSCRIPT") }

// Load loads enqueue.lua and finish.lua, which run on pipelines.
func Load(ctx context.Context, c redis.Scripter) error {
	for _, s := range []*redis.Script{enqueue, finish} {
		if err := s.Load(ctx, c).Err(); err != nil {
			return err
		}
	}
	return nil
}

// Client runs commands at once: a client or a connection, not a pipeline.
type Client interface {
	redis.Scripter
	Process(ctx context.Context, cmd redis.Cmder) error
}

func toInt(v any) int64 {
	switch x := v.(type) {
	case int64:
		return x
	case string:
		n, _ := strconv.ParseInt(x, 10, 64)
		return n
	}
	return 0
}

func toString(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case int64:
		return strconv.FormatInt(x, 10)
	}
	return ""
}
