package middleware

import (
	"context"
	"encoding/json"
	"time"

	"github.com/redis/go-redis/v9"
)

// TaskHandler runs one attempt of a task. Returning nil ends the task
// succeeded with the run's Result; an error fails the attempt exactly as
// an error the task's handler returns (retried with backoff, SkipRetry,
// RetryAfter; see package task).
type TaskHandler func(ctx context.Context, r *TaskRun) error

// TaskMiddleware wraps a TaskHandler. It may act before and after calling
// next, change the context next gets, change the run's Payload before next
// decodes it or its Result after, not call next at all (the task then ends
// with the Result the middleware set, or a null result, when it returns
// nil), or turn next's error into another one. A TaskMiddleware value is
// shared by every task of every queue it is given to: keep its state safe
// for concurrent use.
type TaskMiddleware func(next TaskHandler) TaskHandler

// ChainTask returns h wrapped in mws, the first outermost.
func ChainTask(h TaskHandler, mws ...TaskMiddleware) TaskHandler { return wrap(h, mws) }

// TaskRun is the untyped form of one attempt of a task, as task middleware
// sees it.
type TaskRun struct {
	// Queue is the queue's name, ID the task's, Key its key in a keyed
	// queue ("" otherwise).
	Queue, ID, Key string
	// Attempt counts the runs of the task, this one included (1 the first
	// time); MaxRetries is how many retries it has in all, so the attempt
	// is the last when Attempt > MaxRetries.
	Attempt, MaxRetries int
	// EnqueuedAt is when the task was created, Deadline when this attempt
	// times out.
	EnqueuedAt, Deadline time.Time
	// Headers are the task's headers, as enqueued (task.Headers): trace
	// context among them. Read-only: they are shared with the handler.
	Headers map[string]string
	// Payload is the task's payload as JSON, as enqueued. The handler
	// decodes what the chain leaves here.
	Payload json.RawMessage
	// Result is the handler's result (its R value) once next returned nil;
	// nil before. What it holds when the chain returns nil is stored as
	// the task's result, encoded as JSON.
	Result any
	// Worker is the worker running the attempt (app.Config.WorkerID).
	Worker string
	// App and KeyPrefix are the app's name and Redis key prefix, and
	// Client its Redis client, for middleware that keeps state in Redis.
	App, KeyPrefix string
	Client         redis.UniversalClient
}

// LastAttempt reports whether a failure of this attempt is the task's last:
// no retry follows (the task ends dead).
func (r *TaskRun) LastAttempt() bool { return r.Attempt > r.MaxRetries }
