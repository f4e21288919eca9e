package task

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/leatdev/leat/internal/rdb"
)

// A State is where a task is in its life.
type State string

// The states of a task. Pending, Scheduled, Active and Retrying tasks are
// live; Succeeded, Failed and Cancelled ones are kept for the queue's
// retention; Dead ones are kept within the dead bounds and can be
// requeued.
const (
	Pending   State = "pending"   // ready, waiting for a worker
	Scheduled State = "scheduled" // delayed until its run-at time
	Active    State = "active"    // running on a worker
	Retrying  State = "retrying"  // failed, waiting for its next attempt
	Succeeded State = "succeeded" // done; its result is kept
	Failed    State = "failed"    // ended by SkipRetry; its error is kept
	Dead      State = "dead"      // out of retries
	Cancelled State = "cancelled" // cancelled before it succeeded
)

// States lists every state, in life order.
var States = []State{Pending, Scheduled, Active, Retrying, Succeeded, Failed, Dead, Cancelled}

// Final reports whether s is a state a task leaves only by Requeue.
func (s State) Final() bool {
	return s == Succeeded || s == Failed || s == Dead || s == Cancelled
}

// ErrNotFound is returned for a task ID the queue does not know (never
// enqueued, or forgotten after its retention).
var ErrNotFound = errors.New("task: not found")

// ErrFailed is matched by the error of Result for a task that ended without
// success (failed, dead or cancelled).
var ErrFailed = errors.New("task: did not succeed")

// Info is a task's status. Times absent are zero (StartedAt before the
// first attempt, FinishedAt before the end).
type Info struct {
	ID              string            `json:"id"`
	Queue           string            `json:"queue"`
	State           State             `json:"state"`
	Attempts        int               `json:"attempts"`                   // runs started, this one included
	MaxRetries      int               `json:"max_retries"`                // retries allowed after the first run
	Priority        string            `json:"priority,omitempty"`         // level name (queues with several)
	Key             string            `json:"key,omitempty"`              // keyed queues
	Headers         map[string]string `json:"headers,omitempty"`          // as enqueued (Headers)
	Payload         json.RawMessage   `json:"payload,omitempty"`          // as enqueued (JSON)
	Result          json.RawMessage   `json:"result,omitempty"`           // succeeded: the handler's result (JSON)
	Progress        json.RawMessage   `json:"progress,omitempty"`         // the last progress reported (JSON; see Task.Progress)
	Error           string            `json:"error,omitempty"`            // the last attempt's error
	Worker          string            `json:"worker,omitempty"`           // worker ID of the last attempt
	EnqueuedAt      time.Time         `json:"enqueued_at"`                // created
	DueAt           time.Time         `json:"due_at"`                     // ready from (run-at, or next retry)
	StartedAt       time.Time         `json:"started_at,omitzero"`        // the last attempt started
	FinishedAt      time.Time         `json:"finished_at,omitzero"`       // reached its final state
	Timeout         time.Duration     `json:"timeout"`                    // per attempt
	Retention       time.Duration     `json:"retention"`                  // once finished
	CancelRequested bool              `json:"cancel_requested,omitempty"` // active, with its cancellation under way
	Webhook         *WebhookStatus    `json:"webhook,omitempty"`          // enqueued with the Webhook option
}

// Info returns the status of task id, or ErrNotFound.
func (q *core) Info(ctx context.Context, id string) (*Info, error) {
	m, err := rdb.TaskHash(ctx, q.rdb, q.ks.TaskPrefix(q.name)+id)
	if err != nil {
		return nil, err
	}
	if len(m) == 0 || m["s"] == "" {
		return nil, fmt.Errorf("task %q in queue %q: %w", id, q.name, ErrNotFound)
	}
	return infoOf(id, q.name, q.set.levels, m)
}

// infoOf reads the status of task id from its hash m. The JSON fields
// (payload, progress, result) were checked before they were written; one
// that is not JSON (a corrupt or hand-edited hash) is an error, not a
// status that cannot be encoded.
func infoOf(id, queue string, levels []Level, m map[string]string) (*Info, error) {
	num := func(f string) int64 { n, _ := strconv.ParseInt(m[f], 10, 64); return n }
	at := func(f string) time.Time {
		if n := num(f); n > 0 {
			return time.UnixMilli(n)
		}
		return time.Time{}
	}
	in := &Info{
		ID: id, Queue: queue, State: State(m["s"]), Attempts: int(num("a")), MaxRetries: int(num("r")),
		Key: m["k"], Error: m["err"], Worker: m["w"], EnqueuedAt: at("e"), DueAt: at("d"),
		StartedAt: at("st"), FinishedAt: at("f"), Timeout: time.Duration(num("to")) * time.Millisecond,
		Retention: time.Duration(num("ret")) * time.Millisecond, CancelRequested: m["c"] == "1",
	}
	if l := num("l"); l >= 0 && l < int64(len(levels)) && len(levels) > 1 {
		in.Priority = levels[l].Name
	}
	for _, f := range []struct {
		field, name string
		dst         *json.RawMessage
	}{{"p", "payload", &in.Payload}, {"prog", "progress", &in.Progress}, {"res", "result", &in.Result}} {
		if v := m[f.field]; v != "" {
			if !json.Valid([]byte(v)) {
				return nil, fmt.Errorf("task %q in queue %q: its %s is not JSON", id, queue, f.name)
			}
			*f.dst = json.RawMessage(v)
		}
	}
	h, err := decodeHeaders([]byte(m["h"]))
	if err != nil {
		return nil, fmt.Errorf("task %q in queue %q: %w", id, queue, err)
	}
	in.Headers = h
	if u := m["wh"]; u != "" {
		in.Webhook = &WebhookStatus{URL: u, State: m["whs"], Attempts: int(num("wha")), LastError: m["whe"], DeliveredAt: at("whd")}
	}
	return in, nil
}

// Wait waits until task id is finished (succeeded, failed, dead or
// cancelled) and returns its status; it returns ctx's error when ctx ends
// first (use context.WithTimeout for a timeout).
func (q *core) Wait(ctx context.Context, id string) (*Info, error) {
	d := 2 * time.Millisecond
	for {
		in, err := q.Info(ctx, id)
		if err != nil {
			return nil, err
		}
		if in.State.Final() {
			return in, nil
		}
		t := time.NewTimer(d)
		select {
		case <-ctx.Done():
			t.Stop()
			return in, ctx.Err()
		case <-t.C:
		}
		d = min(2*d, 100*time.Millisecond)
	}
}

// Result waits for task id to finish (see Wait) and returns its decoded
// result, or an error matching ErrFailed (and ErrCancelled for a cancelled
// task) with the task's last error.
func (q *Queue[P, R]) Result(ctx context.Context, id string) (R, error) {
	var r R
	in, err := q.Wait(ctx, id)
	if err != nil {
		return r, err
	}
	switch in.State {
	case Succeeded:
		if err := json.Unmarshal(in.Result, &r); err != nil {
			return r, fmt.Errorf("task %s: decode result: %w", id, err)
		}
		return r, nil
	case Cancelled:
		return r, fmt.Errorf("%w: task %s: %w", ErrFailed, id, ErrCancelled)
	}
	return r, fmt.Errorf("%w: task %s is %s: %s", ErrFailed, id, in.State, in.Error)
}

// Counts returns how many tasks of the queue are in each state. The counts
// are kept by every change of state, so reading them is one O(1) command.
func (q *core) Counts(ctx context.Context) (map[State]int64, error) {
	m, err := rdb.ReadCounts(ctx, q.rdb, q.ks.TaskCounts(q.name))
	if err != nil {
		return nil, err
	}
	return countsOf(m), nil
}

// countsOf reads the hash of a queue's counts: every state, 0 when absent,
// and Waiting when present.
func countsOf(m map[string]string) map[State]int64 {
	out := make(map[State]int64, len(States))
	for _, s := range States {
		n, _ := strconv.ParseInt(m[string(s)], 10, 64)
		out[s] = n
	}
	// flow nodes not released yet: only queues that ran flows have them
	if v, ok := m[string(Waiting)]; ok {
		n, _ := strconv.ParseInt(v, 10, 64)
		out[Waiting] = n
	}
	return out
}
