// The task queue's Redis side (task_*.go, task_*.lua): every command,
// pipeline and Lua script of package task, each behind a function named for
// what it does (task passes its clients through). The scripts of a queue's
// tasks take the same KEYS, the queue's keys in the order of [Keys] (all in
// the queue's hash slot), and start with the helpers of task_common.lua;
// the others (task_beat.lua, task_cron.lua, task_log.lua, task_update.lua,
// task_hookclaim.lua) list their own KEYS in their header.

package rdb

import (
	"context"
	_ "embed"
	"strconv"

	"github.com/redis/go-redis/v9"
)

// TaskGroup is the consumer group of every ready stream.
const TaskGroup = "workers"

var (
	//go:embed task_common.lua
	commonSrc string

	//go:embed task_enqueue.lua
	enqueueSrc string
	//go:embed task_fetch.lua
	taskFetchSrc string
	//go:embed task_finish.lua
	finishSrc string
	//go:embed task_promote.lua
	promoteSrc string
	//go:embed task_reclaim.lua
	reclaimSrc string
	//go:embed task_janitor.lua
	janitorSrc string
	//go:embed task_cancel.lua
	cancelSrc string
	//go:embed task_requeue.lua
	requeueSrc string
	//go:embed task_delete.lua
	deleteSrc string

	enqueue   = script("task_enqueue.lua", enqueueSrc)
	taskFetch = script("task_fetch.lua", taskFetchSrc)
	finish    = script("task_finish.lua", finishSrc)
	promote   = script("task_promote.lua", promoteSrc)
	reclaim   = script("task_reclaim.lua", reclaimSrc)
	janitor   = script("task_janitor.lua", janitorSrc)
	cancel    = script("task_cancel.lua", cancelSrc)
	requeue   = script("task_requeue.lua", requeueSrc)
	remove    = script("task_delete.lua", deleteSrc)
)

// script returns the script of file name, after common.lua; denied
// commands name it (Describe).
func script(name, src string) *redis.Script {
	return redis.NewScript(Describe(name, commonSrc+"\n"+src))
}

// Keys returns the keys of every task script for queue (see common.lua):
// the 16 common KEYS, then the queue's events stream, which a script takes
// as its last key, after its own (taskKeys).
func Keys(s KeySpace, queue string) []string {
	return []string{
		s.TaskPrefix(queue), s.TaskStreamPrefix(queue), s.TaskScheduled(queue), s.TaskDead(queue),
		s.TaskDone(queue), s.TaskCounts(queue), s.TaskUniquePrefix(queue), s.TaskKeyPrefix(queue),
		s.TaskKeys(queue), s.TaskWake(queue), s.TaskRatePrefix(queue), s.TaskWebhooks(queue),
		s.TaskFinishedPrefix(queue), s.TaskFetchedPrefix(queue), s.TaskConfig(queue), s.TaskQueueRate(queue),
		s.TaskEvents(queue),
	}
}

// commonKeys is the number of keys of Keys that every task script takes
// first (see common.lua); Keys' last one, the queue's events stream, comes
// after a script's own keys, as the last of its KEYS.
const commonKeys = 16

// taskKeys returns the KEYS of a task script: the common keys of k (Keys),
// then the script's own keys, then the events stream.
func taskKeys(k []string, own ...string) []string {
	keys := make([]string, 0, len(k)+len(own))
	keys = append(keys, k[:commonKeys]...)
	keys = append(keys, own...)
	return append(keys, k[commonKeys])
}

// errText returns err's text, "" for nil.
func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// LoadTaskScripts loads task_enqueue.lua and task_finish.lua, which run on
// pipelines.
func LoadTaskScripts(ctx context.Context, c redis.Scripter) error {
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
