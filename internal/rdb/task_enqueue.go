// Enqueue: enqueue.lua creates tasks, one call or many on a pipeline.
// Target names the few keys an enqueue writes, so that a Redis user allowed
// only to enqueue needs no other key; a call's Token makes a call sent again
// after a lost reply report the tasks it created as created.

package rdb

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// Target is what enqueue.lua takes of a queue (EnqueueTarget).
type Target struct {
	// Keys are its KEYS: only the keys an enqueue writes, so that the ACL
	// of a Redis user that only enqueues names those (Redis checks every
	// key given to EVAL for reading and writing).
	Keys []string
	// Prefix starts the task hashes (KeySpace.TaskPrefix), which the
	// script reads and writes only with RENAMENX; it goes in ARGV.
	Prefix string
	// KeyConcurrency is how many tasks of a key of a keyed queue are in
	// progress at once (0 or 1: one); MaxKeyBacklog the most tasks a key
	// holds in line, above which a task is refused (0: no bound). Both
	// go in ARGV after the tasks.
	KeyConcurrency, MaxKeyBacklog int
	// Config is the queue's live settings hash (KeySpace.TaskConfig),
	// which the script only reads (whether events are on); it goes in
	// ARGV, last.
	Config string
}

// EnqueueTarget returns what enqueue.lua takes of queue.
func EnqueueTarget(s KeySpace, queue string) Target {
	return Target{
		Keys: []string{
			s.TaskStagePrefix(queue), s.TaskStreamPrefix(queue), s.TaskScheduled(queue), s.TaskCounts(queue),
			s.TaskUniquePrefix(queue), s.TaskKeyPrefix(queue), s.TaskKeys(queue), s.TaskWake(queue),
			s.TaskEvents(queue),
		},
		Prefix: s.TaskPrefix(queue),
		Config: s.TaskConfig(queue),
	}
}

// NewTask is a task to create.
type NewTask struct {
	ID         string
	Payload    []byte
	Level      int
	RunAt      time.Time // zero: now
	MaxRetries int
	Timeout    time.Duration
	Retention  time.Duration
	UniqueKey  string
	UniqueTTL  time.Duration
	Key        string
	Webhook    string // URL POSTed the task's outcome when it ends ("" = none)
	// WebhookSecret signs the task's webhook deliveries (whsec_..., "" =
	// the delivering worker's queue's, if any). Kept in the task's hash.
	WebhookSecret string
	// Token is a random value of the enqueue that creates the task ("" =
	// none), kept with it: when a call is run again after its reply was
	// lost, a task that exists with this ID and this token is the one the
	// earlier run created, reported as created rather than as a duplicate.
	Token string
	// Headers are the task's headers as a JSON object of strings (nil =
	// none).
	Headers []byte
	// UniqueMode is what a unique key does (UniqueKey): "" refuses the
	// task while the key's task has not ended; UniqueDebounce replaces the
	// payload and due time of the key's task while it is scheduled;
	// UniqueThrottle keeps the key for its whole TTL, the task ended or not.
	UniqueMode string
}

// Unique modes of NewTask.
const (
	UniqueDebounce = "debounce"
	UniqueThrottle = "throttle"
)

// EnqueueArgs returns the ARGV of enqueue.lua for tasks of the queue of q.
func EnqueueArgs(q Target, tasks []NewTask) []any {
	args := make([]any, 0, 5+15*len(tasks))
	args = append(args, q.Prefix, len(tasks))
	for _, t := range tasks {
		var at int64
		if !t.RunAt.IsZero() {
			at = t.RunAt.UnixMilli()
		}
		args = append(args, t.ID, t.Payload, t.Level, at, t.MaxRetries, t.Timeout.Milliseconds(),
			t.Retention.Milliseconds(), t.UniqueKey, max(t.UniqueTTL.Milliseconds(), 1), t.Key, t.Webhook, t.Token, t.Headers,
			t.WebhookSecret, t.UniqueMode)
	}
	return append(args, q.Config, max(q.KeyConcurrency, 1), max(q.MaxKeyBacklog, 0))
}

// Enqueue creates tasks (enqueue.lua) and returns, per task, whether it was
// created and its ID (the existing task's when not). Many calls can share a
// pipeline: see EnqueueCmd.
//
// KEYS: Target.Keys. ARGV: Target.Prefix, n, then id, payload, level, run-at ms, max retries,
// timeout ms, retention ms, unique key, unique TTL ms, key, webhook, token,
// headers, webhook secret, unique mode per task, then Target.Config, key
// concurrency and max key backlog. A task that exists with its ID and its
// non-empty Token (an earlier run of the same call) counts as created. A
// task refused because its key's line is full (Target.MaxKeyBacklog) is
// not created and its ID is "".
func Enqueue(ctx context.Context, c redis.Scripter, q Target, tasks []NewTask) (created []bool, ids []string, err error) {
	v, err := enqueue.Run(ctx, c, q.Keys, EnqueueArgs(q, tasks)...).Slice()
	if err != nil {
		return nil, nil, err
	}
	return ParseEnqueue(v)
}

// EnqueueCmd queues enqueue.lua on a pipeline (EVALSHA: load it first with
// Load, and rerun commands that failed with NOSCRIPT).
func EnqueueCmd(ctx context.Context, p redis.Pipeliner, q Target, tasks []NewTask) *redis.Cmd {
	return enqueue.EvalSha(ctx, p, q.Keys, EnqueueArgs(q, tasks)...)
}

// enqueueBacklogFull is enqueue.lua's status of a task refused because its
// key's line is full.
const enqueueBacklogFull = 4

// ParseEnqueue parses enqueue.lua's reply: a task refused because its
// key's line is full has ID "".
func ParseEnqueue(v []any) (created []bool, ids []string, err error) {
	if len(v)%2 != 0 {
		return nil, nil, fmt.Errorf("enqueue: odd reply of %d values", len(v))
	}
	for i := 0; i < len(v); i += 2 {
		st := toInt(v[i])
		created = append(created, st != 0 && st != enqueueBacklogFull) // 2: created by an earlier run of the call
		if st == enqueueBacklogFull {
			ids = append(ids, "")
		} else {
			ids = append(ids, toString(v[i+1]))
		}
	}
	return created, ids, nil
}

// IsCluster reports whether c is a Cluster client.
func IsCluster(c redis.UniversalClient) bool {
	_, ok := c.(*redis.ClusterClient)
	return ok
}

// EnqueueRound runs enqueue.lua for the chunks at todo on one pipeline
// (EnqueueCmd) and returns, in the order of todo, each call's reply and
// error (a NOSCRIPT error: load the scripts and run the chunk again).
func EnqueueRound(ctx context.Context, c redis.Cmdable, q Target, chunks [][]NewTask, todo []int) ([][]any, []error) {
	pipe := c.Pipeline()
	cmds := make([]*redis.Cmd, len(todo))
	for i, ch := range todo {
		cmds[i] = EnqueueCmd(ctx, pipe, q, chunks[ch])
	}
	_, _ = pipe.Exec(ctx) // replies are read one by one
	vs, errs := make([][]any, len(todo)), make([]error, len(todo))
	for i := range cmds {
		vs[i], errs[i] = cmds[i].Slice()
	}
	return vs, errs
}
