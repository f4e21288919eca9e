// Fetch: fetch.lua hands tasks to a worker and marks them active, in three
// modes: "read" (read ready entries), "given" (the entries of a blocking
// XREADGROUP) and "own" (entries pending with the worker whose tasks it never
// took). Every mode can be sent again after a lost reply and hands out the
// same tasks; its reply is parsed in place.

package rdb

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"

	"github.com/leatdev/leat/internal/resp"
)

// ErrPaused is the error of a fetch while its queue is paused (see
// fetch.lua): it took no task.
var ErrPaused = errors.New("task queue paused")

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

// FetchTasks reads up to total ready tasks for consumer, quota[l] from level l
// first, then fills from the levels in order, and marks them active
// (fetch.lua, mode "read"). Keys over rate are parked until their window
// ends. call identifies the call (NewCall): run again with the same call
// after an error, it hands out the tasks its first run took, if it ran,
// instead of reading others; those may be more than total when the first
// run's total was larger.
//
// KEYS: Keys. ARGV: consumer, key rate, its window ms, "read", call, queue
// rate, its window ms, levels, quotas..., total.
func FetchTasks(ctx context.Context, c Client, k []string, consumer string, lim Limits, call string, quota []int, total int) ([]Fetched, error) {
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

// runFetch runs fetch.lua and reads its reply raw (see parseFetched): the
// tasks' IDs, keys and payloads point into the reply's one slice. go-redis
// never sends the call again (OnceCmd): a call whose reply was lost
// returns the error, and its caller sends it again (fetch.lua hands out the
// same tasks).
func runFetch(ctx context.Context, c Client, k []string, args []any) ([]Fetched, error) {
	// KEYS[17] and KEYS[18]: the call's memo and the worker's own-call
	// cursor (args: consumer, ..., call; see Limits.args)
	consumer, call := args[0].(string), args[4].(string)
	argv := make([]any, 0, 5+len(k)+len(args))
	argv = append(argv, "evalsha", taskFetch.Hash(), len(k)+2)
	for _, key := range k[:commonKeys] {
		argv = append(argv, key)
	}
	argv = append(argv, k[13]+consumer+":"+callSlot(call), k[13]+consumer+":own", k[commonKeys])
	argv = append(argv, args...)
	for try := 0; ; try++ {
		cmd := NewOnceCmd(ctx, argv...)
		err := c.Process(ctx, cmd)
		var out []Fetched
		if err == nil {
			out, err = parseFetched(cmd.Val())
		}
		if strings.HasPrefix(errText(err), "PAUSED ") {
			err = ErrPaused
		}
		if strings.HasPrefix(errText(err), "FULL ") {
			err = ErrGlobalFull
		}
		if ms, ok := strings.CutPrefix(errText(err), "RATE "); ok {
			n, _ := strconv.ParseInt(ms, 10, 64)
			err = &RateLimitedError{Wait: time.Duration(n) * time.Millisecond}
		}
		if try == 0 && IsNoScript(err) {
			// A restarted server: nothing ran; load and run again.
			if err := taskFetch.Load(ctx, c).Err(); err != nil {
				return nil, err
			}
			continue
		}
		return out, err
	}
}

// callSlot returns the slot of call ID call (its digits before a dot; see
// NewCallIn), "" when it has none (FetchGiven's calls).
func callSlot(call string) string {
	i := strings.IndexByte(call, '.')
	if i <= 0 {
		return ""
	}
	for _, r := range call[:i] {
		if r < '0' || r > '9' {
			return ""
		}
	}
	return call[:i]
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
