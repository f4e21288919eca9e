// Package taskrdb holds the Redis side of the task queue: its Lua scripts,
// each with a typed wrapper. Every script takes the same KEYS, the queue's
// keys in the order of [Keys] (all in the queue's hash slot), and starts
// with the helpers of common.lua.
package taskrdb

import (
	"cmp"
	"context"
	_ "embed"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/leatdev/leat/internal/keys"
	"github.com/leatdev/leat/internal/resp"
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

// Target is what enqueue.lua takes of a queue (EnqueueTarget).
type Target struct {
	// Keys are its KEYS: only the keys an enqueue writes, so that the ACL
	// of a Redis user that only enqueues names those (Redis checks every
	// key given to EVAL for reading and writing).
	Keys []string
	// Prefix starts the task hashes (keys.Space.TaskPrefix), which the
	// script reads and writes only with RENAMENX; it goes in ARGV.
	Prefix string
}

// EnqueueTarget returns what enqueue.lua takes of queue.
func EnqueueTarget(s keys.Space, queue string) Target {
	return Target{
		Keys: []string{
			s.TaskStagePrefix(queue), s.TaskStreamPrefix(queue), s.TaskScheduled(queue), s.TaskCounts(queue),
			s.TaskUniquePrefix(queue), s.TaskKeyPrefix(queue), s.TaskKeys(queue), s.TaskWake(queue),
		},
		Prefix: s.TaskPrefix(queue),
	}
}

// ErrPaused is the error of a fetch while its queue is paused (see
// fetch.lua): it took no task.
var ErrPaused = errors.New("task queue paused")

// ResumeMessage is what the queue's cancel channel (keys.Space.TaskCancel)
// carries when the queue is resumed, or its live rate changed: the workers
// that wait for either fetch again at once. No task ID starts with '~'.
const ResumeMessage = "~resume"

// Fields of the queue's live settings (keys.Space.TaskConfig): PausedField,
// whose presence pauses the queue (value: Unix ms of the pause; fetch.lua
// checks it); RateField, the rate limit set live, which fetch.lua applies
// in place of its worker's (LiveRate's text); ConcurrencyField, the
// concurrency per worker set live (ParseLiveConcurrency).
const (
	PausedField      = "paused"
	RateField        = "rate"
	ConcurrencyField = "concurrency"
)

// ParseLiveConcurrency reads ConcurrencyField's text: a whole number of at
// least 1, else none (false).
func ParseLiveConcurrency(s string) (int, bool) {
	n, err := strconv.Atoi(s)
	return n, err == nil && n >= 1
}

// LiveRate is the text of RateField for r ("N WINDOW_MS"; "0 0": no limit).
func LiveRate(r Rate) string {
	return strconv.Itoa(r.N) + " " + strconv.FormatInt(r.Window.Milliseconds(), 10)
}

// ParseLiveRate reads RateField's text.
func ParseLiveRate(s string) (Rate, error) {
	n, ms, ok := strings.Cut(s, " ")
	a, err1 := strconv.Atoi(n)
	b, err2 := strconv.ParseInt(ms, 10, 64)
	if !ok || err1 != nil || err2 != nil || a < 0 || b < 0 {
		return Rate{}, fmt.Errorf("live rate %q: want \"N WINDOW_MS\"", s)
	}
	return Rate{N: a, Window: time.Duration(b) * time.Millisecond}, nil
}

// Finished-task counters (keys.Space.TaskFinishedPrefix): every script that
// ends tasks adds them to the counter of the current bucket, one INCRBY and
// one PEXPIRE per call. common.lua holds the same values.
const (
	// FinishedBucket is the width of one counter's bucket.
	FinishedBucket = 10 * time.Second
	// FinishedKeep is how long a counter is kept after its last increment:
	// the longest throughput window read (5 minutes), its bucket being
	// filled, and a margin.
	FinishedKeep = 330 * time.Second
)

// FinishedKeys returns the keys of the finished-task counters (prefix:
// keys.Space.TaskFinishedPrefix) covering the window ending at now: the
// current bucket and the whole buckets before it, as many as fit in
// window. The counts of those keys are the tasks finished from start to
// now, a span between window - FinishedBucket and window long.
func FinishedKeys(prefix string, now time.Time, window time.Duration) (ks []string, start time.Time) {
	width := int64(FinishedBucket / time.Second)
	cur := now.Unix() / width
	n := int64(window / FinishedBucket) // whole buckets before the current one
	if n > 0 && now.Sub(time.Unix(cur*width, 0)) > 0 {
		n-- // the current bucket has begun: the span stays within window
	}
	for b := cur - n; b <= cur; b++ {
		ks = append(ks, prefix+strconv.FormatInt(b, 10))
	}
	return ks, time.Unix((cur-n)*width, 0)
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
}

// EnqueueArgs returns the ARGV of enqueue.lua for tasks of the queue whose
// task hashes start with prefix (keys.Space.TaskPrefix).
func EnqueueArgs(prefix string, tasks []NewTask) []any {
	args := make([]any, 0, 2+14*len(tasks))
	args = append(args, prefix, len(tasks))
	for _, t := range tasks {
		var at int64
		if !t.RunAt.IsZero() {
			at = t.RunAt.UnixMilli()
		}
		args = append(args, t.ID, t.Payload, t.Level, at, t.MaxRetries, t.Timeout.Milliseconds(),
			t.Retention.Milliseconds(), t.UniqueKey, max(t.UniqueTTL.Milliseconds(), 1), t.Key, t.Webhook, t.Token, t.Headers,
			t.WebhookSecret)
	}
	return args
}

// Enqueue creates tasks (enqueue.lua) and returns, per task, whether it was
// created and its ID (the existing task's when not). Many calls can share a
// pipeline: see EnqueueCmd.
//
// KEYS: Target.Keys. ARGV: Target.Prefix, n, then id, payload, level, run-at ms, max retries,
// timeout ms, retention ms, unique key, unique TTL ms, key, webhook, token,
// headers, webhook secret per task. A task that exists with its ID and its non-empty Token (an
// earlier run of the same call) counts as created.
func Enqueue(ctx context.Context, c redis.Scripter, q Target, tasks []NewTask) (created []bool, ids []string, err error) {
	v, err := enqueue.Run(ctx, c, q.Keys, EnqueueArgs(q.Prefix, tasks)...).Slice()
	if err != nil {
		return nil, nil, err
	}
	return ParseEnqueue(v)
}

// EnqueueCmd queues enqueue.lua on a pipeline (EVALSHA: load it first with
// Load, and rerun commands that failed with NOSCRIPT).
func EnqueueCmd(ctx context.Context, p redis.Pipeliner, q Target, tasks []NewTask) *redis.Cmd {
	return enqueue.EvalSha(ctx, p, q.Keys, EnqueueArgs(q.Prefix, tasks)...)
}

// Load loads enqueue.lua and finish.lua, which run on pipelines.
func Load(ctx context.Context, c redis.Scripter) error {
	for _, s := range []*redis.Script{enqueue, finish} {
		if err := s.Load(ctx, c).Err(); err != nil {
			return err
		}
	}
	return nil
}

// ParseEnqueue parses enqueue.lua's reply.
func ParseEnqueue(v []any) (created []bool, ids []string, err error) {
	if len(v)%2 != 0 {
		return nil, nil, fmt.Errorf("enqueue: odd reply of %d values", len(v))
	}
	for i := 0; i < len(v); i += 2 {
		created = append(created, toInt(v[i]) != 0) // 2: created by an earlier run of the call
		ids = append(ids, toString(v[i+1]))
	}
	return created, ids, nil
}

// Fetched is a task taken by a worker.
type Fetched struct {
	Level    int
	Entry    string
	ID       string
	Payload  []byte
	Attempt  int
	MaxRetry int
	Timeout  time.Duration
	Key      string
	Enqueued time.Time
	Headers  []byte // a JSON object of strings (nil: none)
}

// Entry is a ready entry read by a blocking XREADGROUP.
type Entry struct {
	Level int
	ID    string
	Field string // "t" (task ID) or "k" (task key)
	Value string
}

// Rate is a rate limit: at most N tasks start per Window (fixed windows,
// each opened by its first task). The zero Rate is no limit.
type Rate struct {
	N      int
	Window time.Duration
}

// Limits are the rate limits of a fetch: Key, per key of a keyed queue (a
// key over it is parked until its window ends); Queue, over the whole
// queue and every worker (a fetch takes what is left of the window's
// budget, and with none left fails with a RateLimitedError).
type Limits struct {
	Key, Queue Rate
}

// args returns fetch.lua's ARGV from the consumer to the queue's window.
func (l Limits) args(consumer, mode, call string, extra int) []any {
	out := make([]any, 0, 7+extra)
	return append(out, consumer, l.Key.N, l.Key.Window.Milliseconds(), mode, call, l.Queue.N, l.Queue.Window.Milliseconds())
}

// RateLimitedError is the error of a fetch under a queue rate limit with
// nothing left of the window's budget: it took no task. Wait is the time
// to the window's end.
type RateLimitedError struct {
	Wait time.Duration
}

func (e *RateLimitedError) Error() string {
	return fmt.Sprintf("task queue rate limit reached: the window ends in %s", e.Wait)
}

// Fetch reads up to total ready tasks for consumer, quota[l] from level l
// first, then fills from the levels in order, and marks them active
// (fetch.lua, mode "read"). Keys over rate are parked until their window
// ends. call identifies the call (NewCall): run again with the same call
// after an error, it hands out the tasks its first run took, if it ran,
// instead of reading others; those may be more than total when the first
// run's total was larger.
//
// KEYS: Keys. ARGV: consumer, key rate, its window ms, "read", call, queue
// rate, its window ms, levels, quotas..., total.
func Fetch(ctx context.Context, c Client, k []string, consumer string, lim Limits, call string, quota []int, total int) ([]Fetched, error) {
	args := append(lim.args(consumer, "read", call, 2+len(quota)), len(quota))
	for _, q := range quota {
		args = append(args, q)
	}
	args = append(args, total)
	return runFetch(ctx, c, k, args)
}

// NewCall returns a fresh call ID for Fetch, of slot 0 (see NewCallIn).
func NewCall() string { return NewCallIn(0) }

// NewCallIn returns a fresh call ID for Fetch, of a slot of the worker's.
// What a read call took is kept per worker and slot, for the call to be
// sent again: the calls of a worker that may be under way at once, or
// waiting to be sent again, must be of different slots, and a slot's next
// call replaces its memo.
func NewCallIn(slot int) string {
	return strconv.Itoa(slot) + "." + strconv.FormatUint(rand.Uint64(), 36)
}

// FetchGiven marks the tasks of entries read by a blocking XREADGROUP
// active (fetch.lua, mode "given"), parking keys over rate. Run again with
// the same entries after an error, it hands out the tasks its first run
// took again.
//
// KEYS: Keys. ARGV: consumer, key rate, its window ms, "given", "", queue
// rate, its window ms, then level, entry ID, field, value per entry.
func FetchGiven(ctx context.Context, c Client, k []string, consumer string, lim Limits, entries []Entry) ([]Fetched, error) {
	args := lim.args(consumer, "given", "", 4*len(entries))
	for _, e := range entries {
		args = append(args, e.Level, e.ID, e.Field, e.Value)
	}
	return runFetch(ctx, c, k, args)
}

// FetchOwn takes up to n tasks of entries pending with consumer whose
// tasks it never took, on levels 0 to levels-1 (fetch.lua, mode "own"):
// those of a blocking XREADGROUP whose reply was lost, which nothing else
// hands out before the visibility timeout. Each call starts where the
// consumer's last one left off, so the entries of its running tasks are
// walked once, not by every call. call identifies the call, as
// for Fetch: run again after an error, it hands out the tasks its first run
// took (which are active with consumer now, so that no other call of
// consumer takes them).
//
// KEYS: Keys. ARGV: consumer, key rate, its window ms, "own", call, queue
// rate, its window ms, levels, n.
func FetchOwn(ctx context.Context, c Client, k []string, consumer string, lim Limits, call string, levels, n int) ([]Fetched, error) {
	return runFetch(ctx, c, k, append(lim.args(consumer, "own", call, 2), levels, n))
}

// Client runs commands at once: a client or a connection, not a pipeline.
type Client interface {
	redis.Scripter
	Process(ctx context.Context, cmd redis.Cmder) error
}

// runFetch runs fetch.lua and reads its reply raw (see parseFetched): the
// tasks' IDs, keys and payloads point into the reply's one slice. go-redis
// never sends the call again (scripts.OnceCmd): a call whose reply was lost
// returns the error, and its caller sends it again (fetch.lua hands out the
// same tasks).
func runFetch(ctx context.Context, c Client, k []string, args []any) ([]Fetched, error) {
	argv := make([]any, 0, 3+len(k)+len(args))
	argv = append(argv, "evalsha", fetch.Hash(), len(k))
	for _, key := range k {
		argv = append(argv, key)
	}
	argv = append(argv, args...)
	for try := 0; ; try++ {
		cmd := scripts.NewOnceCmd(ctx, argv...)
		err := c.Process(ctx, cmd)
		var out []Fetched
		if err == nil {
			out, err = parseFetched(cmd.Val())
		}
		if strings.HasPrefix(errText(err), "PAUSED ") {
			err = ErrPaused
		}
		if ms, ok := strings.CutPrefix(errText(err), "RATE "); ok {
			n, _ := strconv.ParseInt(ms, 10, 64)
			err = &RateLimitedError{Wait: time.Duration(n) * time.Millisecond}
		}
		if try == 0 && IsNoScript(err) {
			// A restarted server: nothing ran; load and run again.
			if err := fetch.Load(ctx, c).Err(); err != nil {
				return nil, err
			}
			continue
		}
		return out, err
	}
}

// parseFetched reads fetch.lua's reply in place: the entry IDs, task IDs
// and keys of all its tasks share one string, and the payloads are slices
// of the reply, where go-redis's generic reply would cost a dozen
// allocations per task.
func parseFetched(raw []byte) ([]Fetched, error) {
	r := resp.NewReader(raw)
	n, err := r.Aggregate()
	if err != nil || n <= 0 {
		return nil, err
	}
	type span struct{ from, to int } // of the reply
	type row struct {
		level, attempt, maxRetry, timeout, enqueued int64
		entry, id, payload, key, headers            span
	}
	rows := make([]row, n)
	text := 0 // bytes of the entry IDs, IDs and keys
	for i := range rows {
		if m, err := r.Aggregate(); err != nil || m != 10 {
			return nil, cmp.Or(err, fmt.Errorf("fetch: bad reply: a task of %d fields", m))
		}
		w := &rows[i]
		var errs [10]error
		w.level, errs[0] = r.Number()
		w.entry.from, w.entry.to, _, errs[1] = r.Bulk()
		w.id.from, w.id.to, _, errs[2] = r.Bulk()
		w.payload.from, w.payload.to, _, errs[3] = r.Bulk()
		w.attempt, errs[4] = r.Number()
		w.maxRetry, errs[5] = r.Number()
		w.timeout, errs[6] = r.Number()
		w.key.from, w.key.to, _, errs[7] = r.Bulk()
		w.enqueued, errs[8] = r.Number()
		w.headers.from, w.headers.to, _, errs[9] = r.Bulk()
		if err := errors.Join(errs[:]...); err != nil {
			return nil, fmt.Errorf("fetch: bad reply: %w", err)
		}
		text += w.entry.to - w.entry.from + w.id.to - w.id.from + w.key.to - w.key.from
	}
	var b strings.Builder
	b.Grow(text)
	for _, w := range rows {
		b.Write(raw[w.entry.from:w.entry.to])
		b.Write(raw[w.id.from:w.id.to])
		b.Write(raw[w.key.from:w.key.to])
	}
	all, at := b.String(), 0
	cut := func(s span) string {
		v := all[at : at+s.to-s.from]
		at += s.to - s.from
		return v
	}
	out := make([]Fetched, n)
	for i, w := range rows {
		out[i] = Fetched{
			Level: int(w.level), Entry: cut(w.entry), ID: cut(w.id), Key: cut(w.key),
			Payload: raw[w.payload.from:w.payload.to:w.payload.to], Attempt: int(w.attempt), MaxRetry: int(w.maxRetry),
			Timeout: time.Duration(w.timeout) * time.Millisecond, Enqueued: time.UnixMilli(w.enqueued),
		}
		if w.headers.to > w.headers.from {
			out[i].Headers = raw[w.headers.from:w.headers.to:w.headers.to]
		}
	}
	return out, nil
}

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

// Promote moves at most limit due tasks to the ready streams (promote.lua)
// and returns how many, the next due time (zero when none) and the server's
// time.
//
// KEYS: Keys. ARGV: limit.
func Promote(ctx context.Context, c redis.Scripter, k []string, limit int) (moved int, next, now time.Time, err error) {
	v, err := promote.Run(ctx, c, k, limit).Int64Slice()
	if err != nil {
		return 0, next, now, err
	}
	if v[1] >= 0 {
		next = time.UnixMilli(v[1])
	}
	return int(v[0]), next, time.UnixMilli(v[2]), nil
}

// Reclaim makes ready again the tasks of level whose entries were idle for
// at least minIdle (reclaim.lua), from cursor on. It returns the next cursor
// ("0-0" when the pass is complete), how many were reclaimed and how many
// became dead.
//
// KEYS: Keys. ARGV: consumer, min idle ms, count, level, cursor, dead max,
// dead age ms.
func Reclaim(ctx context.Context, c redis.Scripter, k []string, consumer string, minIdle time.Duration, count, level int, cursor string, deadMax int, deadAge time.Duration) (next string, reclaimed, buried int, err error) {
	v, err := reclaim.Run(ctx, c, k, consumer, minIdle.Milliseconds(), count, level, cursor, deadMax, deadAge.Milliseconds()).Slice()
	if err != nil {
		return "", 0, 0, err
	}
	return toString(v[0]), int(toInt(v[1])), int(toInt(v[2])), nil
}

// Janitor removes at most limit finished tasks whose retention ended and
// as many dead tasks older than deadAge (janitor.lua). It returns how many
// of each and the next end of retention (zero when none).
//
// KEYS: Keys. ARGV: limit, dead age ms.
func Janitor(ctx context.Context, c redis.Scripter, k []string, limit int, deadAge time.Duration) (done, dead int, next time.Time, err error) {
	v, err := janitor.Run(ctx, c, k, limit, deadAge.Milliseconds()).Int64Slice()
	if err != nil {
		return 0, 0, next, err
	}
	if v[2] >= 0 {
		next = time.UnixMilli(v[2])
	}
	return int(v[0]), int(v[1]), next, nil
}

// Cancel drops a pending or scheduled task or flags an active one
// (cancel.lua). It returns the state before and the action: "cancelled",
// "signal" (publish the ID to the queue's cancel channel), "final" or
// "missing".
//
// KEYS: Keys. ARGV: task ID.
func Cancel(ctx context.Context, c redis.Scripter, k []string, id string) (state, action string, err error) {
	v, err := cancel.Run(ctx, c, k, id).StringSlice()
	if err != nil {
		return "", "", err
	}
	return v[0], v[1], nil
}

// Requeue makes a dead or failed task ready again (requeue.lua) and returns
// its state before ("" when missing).
//
// KEYS: Keys. ARGV: task ID.
func Requeue(ctx context.Context, c redis.Scripter, k []string, id string) (string, error) {
	v, err := requeue.Run(ctx, c, k, id).Text()
	if errors.Is(err, redis.Nil) {
		return "", nil
	}
	return v, err
}

// Delete removes task id now if it has ended (succeeded, failed,
// cancelled or dead) and returns the state it was in ("" when missing):
// its hash, its place in the retention index or the dead set, a webhook
// delivery still due, its updates and its log (delete.lua). A task that has
// not ended is left alone.
//
// KEYS: Keys, updates prefix, logs prefix. ARGV: "id", task ID.
func Delete(ctx context.Context, c redis.Scripter, k []string, updates, logs, id string) (string, error) {
	return remove.Run(ctx, c, append(slices.Clip(k), updates, logs), "id", id).Text()
}

// DeleteDead removes up to limit of the oldest dead tasks as Delete does
// and returns how many, and whether more may be left.
//
// KEYS: Keys, updates prefix, logs prefix. ARGV: "dead", limit.
func DeleteDead(ctx context.Context, c redis.Scripter, k []string, updates, logs string, limit int) (deleted int, more bool, err error) {
	v, err := remove.Run(ctx, c, append(slices.Clip(k), updates, logs), "dead", limit).Int64Slice()
	if err != nil {
		return 0, false, err
	}
	return int(v[0]), int(v[1]) >= limit, nil
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

var (
	//go:embed cron.lua
	cronSrc  string
	cronTick = redis.NewScript(scripts.Describe("task queue cron.lua", cronSrc))
)

// CronTick records that tick of schedule name was enqueued by the leader of
// term (cron.lua): 1 recorded, 0 recorded before, -1 a later term recorded
// one (stop).
//
// KEYS: cron hash. ARGV: name, tick ms, term.
func CronTick(ctx context.Context, c redis.Scripter, cronKey, name string, tick time.Time, term int64) (int, error) {
	v, err := cronTick.Run(ctx, c, []string{cronKey}, name, tick.UnixMilli(), term).Int()
	return v, err
}
