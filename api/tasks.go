package api

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/leatdev/leat/inspect"
	"github.com/leatdev/leat/internal/core"
	"github.com/leatdev/leat/internal/rdb"
	"github.com/leatdev/leat/task"
)

type rawQueue = task.Queue[json.RawMessage, json.RawMessage]

// duration is a Go duration written as a string ("1m30s"), read and
// answered alike.
type duration time.Duration

// MarshalJSON answers the duration as time.Duration.String writes it, which
// UnmarshalJSON (and time.ParseDuration) reads back.
func (d duration) MarshalJSON() ([]byte, error) {
	return json.Marshal(time.Duration(d).String())
}

func (d *duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("a duration is a string such as \"90s\" or \"1h30m\", not %s", b)
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("duration %q: want a number and a unit, such as \"90s\", \"1h30m\" or \"500ms\"", s)
	}
	if v < 0 {
		return fmt.Errorf("duration %q is negative", s)
	}
	*d = duration(v)
	return nil
}

// enqueueRequest is the body of an enqueue or a runsync.
type enqueueRequest struct {
	Payload    json.RawMessage   `json:"payload"`
	ID         string            `json:"id"`
	Delay      duration          `json:"delay"`
	At         *time.Time        `json:"at"`
	MaxRetries *int              `json:"max_retries"`
	Timeout    duration          `json:"timeout"`
	Retention  duration          `json:"retention"`
	Unique     duration          `json:"unique"`
	UniqueKey  string            `json:"unique_key"`
	Priority   string            `json:"priority"`
	Key        *string           `json:"key"`
	Webhook    string            `json:"webhook"`
	HookSecret string            `json:"webhook_secret"`
	Headers    map[string]string `json:"headers"`
}

// options turns the request into enqueue options, or names what is wrong.
func (e *enqueueRequest) options() ([]task.EnqueueOption, error) {
	var opts []task.EnqueueOption
	if e.ID != "" {
		opts = append(opts, task.ID(e.ID))
	}
	if e.Delay > 0 {
		opts = append(opts, task.Delay(time.Duration(e.Delay)))
	}
	if e.At != nil {
		opts = append(opts, task.At(*e.At))
	}
	if e.MaxRetries != nil {
		if *e.MaxRetries < 0 {
			return nil, fmt.Errorf("max_retries %d is negative", *e.MaxRetries)
		}
		opts = append(opts, task.WithMaxRetries(*e.MaxRetries))
	}
	if e.Timeout > 0 {
		opts = append(opts, task.WithTimeout(time.Duration(e.Timeout)))
	}
	if e.Retention > 0 {
		opts = append(opts, task.WithRetention(time.Duration(e.Retention)))
	}
	switch {
	case e.UniqueKey != "" && e.Unique == 0:
		return nil, errors.New("unique_key needs unique (a TTL such as \"1h\")")
	case e.UniqueKey != "":
		opts = append(opts, task.UniqueKey(e.UniqueKey, time.Duration(e.Unique)))
	case e.Unique > 0:
		opts = append(opts, task.Unique(time.Duration(e.Unique)))
	}
	if e.Priority != "" {
		opts = append(opts, task.Priority(e.Priority))
	}
	if e.Key != nil {
		opts = append(opts, task.Key(*e.Key))
	}
	if e.Webhook != "" {
		opts = append(opts, task.Webhook(e.Webhook))
	}
	if e.HookSecret != "" {
		opts = append(opts, task.WithWebhookSecret(e.HookSecret))
	}
	if len(e.Headers) > 0 {
		opts = append(opts, task.Headers(e.Headers))
	}
	return opts, nil
}

// decodeObject decodes body, one JSON object, into v, refusing fields v
// does not have, anything after the object, and text encoding/json would
// decode with replacements or by dropping a value (invalid UTF-8, lone
// surrogates, a name twice: see core.CheckJSONText); it answers a bad body
// and returns false.
func (h *handler) decodeObject(w http.ResponseWriter, body []byte, v any) bool {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		bodyError(w, err, h.opts.MaxBody)
		return false
	}
	if err := core.CheckJSONText(body); err != nil {
		writeError(w, http.StatusBadRequest, "bad_json", "request body: "+err.Error())
		return false
	}
	if dec.More() {
		writeError(w, http.StatusBadRequest, "bad_json", "request body: more than one JSON value")
		return false
	}
	if rest := bytes.TrimSpace(body[dec.InputOffset():]); len(rest) > 0 {
		// A closing } or ], which More does not count as a value.
		writeError(w, http.StatusBadRequest, "bad_json", fmt.Sprintf("request body: invalid JSON after the object: %q", rest[:1]))
		return false
	}
	return true
}

// decodeEnqueue reads the body of an enqueue strictly.
func (h *handler) decodeEnqueue(w http.ResponseWriter, r *http.Request) (json.RawMessage, []task.EnqueueOption, string, bool) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		bodyError(w, err, h.opts.MaxBody)
		return nil, nil, "", false
	}
	if len(bytes.TrimSpace(body)) == 0 {
		bodyError(w, errEmpty, h.opts.MaxBody)
		return nil, nil, "", false
	}
	var req enqueueRequest
	if !h.decodeObject(w, body, &req) {
		return nil, nil, "", false
	}
	if len(req.Payload) == 0 {
		writeError(w, http.StatusBadRequest, "bad_json", `request body: field "payload" is missing (use null for no payload)`)
		return nil, nil, "", false
	}
	opts, err := req.options()
	if err != nil {
		writeError(w, http.StatusBadRequest, "bad_task", err.Error())
		return nil, nil, "", false
	}
	return req.Payload, opts, req.Priority, true
}

// lookupQueue returns queue name as its programs recorded it in Redis, or
// answers the request and returns nil.
func (h *handler) lookupQueue(w http.ResponseWriter, r *http.Request) *rawQueue {
	name := r.PathValue("queue")
	if err := rdb.CheckName("task queue", name); err != nil {
		writeError(w, http.StatusBadRequest, "bad_name", err.Error())
		return nil
	}
	q, err := task.Lookup(r.Context(), h.a, name)
	switch {
	case errors.Is(err, task.ErrUnknownQueue):
		writeError(w, http.StatusNotFound, "unknown_queue", fmt.Sprintf("unknown task queue %q: no program of app %q declared it", name, h.a.Name()))
		return nil
	case err != nil:
		schemaError(w, err)
		return nil
	}
	return q
}

// enqueue creates a task and answers its ID; a duplicate answers 409 with
// the existing task's ID, a task refused because its key's line is full
// (task.MaxKeyBacklog) 429.
func (h *handler) enqueue(w http.ResponseWriter, r *http.Request) {
	payload, opts, priority, ok := h.decodeEnqueue(w, r)
	if !ok {
		return
	}
	q, opts := h.lookupAddress(w, r, opts, priority)
	if q == nil {
		return
	}
	id, err := q.Enqueue(r.Context(), payload, opts...)
	if !enqueueAnswered(w, id, err) {
		writeJSON(w, http.StatusOK, map[string]string{"id": id})
	}
}

// enqueueAnswered answers a failed enqueue and reports whether it did.
func enqueueAnswered(w http.ResponseWriter, id string, err error) bool {
	switch {
	case err == nil:
		return false
	case errors.Is(err, task.ErrKeyBacklogFull):
		writeError(w, http.StatusTooManyRequests, "key_backlog_full", err.Error())
	case errors.Is(err, task.ErrDuplicate):
		writeJSON(w, http.StatusConflict, apiError{Error: err.Error(), Code: "duplicate", ID: id})
	case errors.Is(err, task.ErrInvalid):
		writeError(w, http.StatusBadRequest, "bad_task", err.Error())
	default:
		internalError(w, err)
	}
	return true
}

// runSync enqueues a task and waits for its outcome up to ?timeout.
func (h *handler) runSync(w http.ResponseWriter, r *http.Request) {
	timeout := DefaultTimeout
	if s := r.URL.Query().Get("timeout"); s != "" {
		d, err := time.ParseDuration(s)
		switch {
		case err != nil:
			writeError(w, http.StatusBadRequest, "bad_timeout", fmt.Sprintf("timeout %q is not a duration such as 30s or 2m", s))
			return
		case d <= 0 || d > h.opts.MaxWait:
			writeError(w, http.StatusBadRequest, "bad_timeout", fmt.Sprintf("timeout %s must be positive and at most %s", d, h.opts.MaxWait))
			return
		}
		timeout = d
	}
	payload, opts, priority, ok := h.decodeEnqueue(w, r)
	if !ok {
		return
	}
	q, opts := h.lookupAddress(w, r, opts, priority)
	if q == nil {
		return
	}
	id, err := q.Enqueue(r.Context(), payload, opts...)
	if enqueueAnswered(w, id, err) {
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), timeout)
	defer cancel()
	in, err := q.Wait(ctx, id)
	switch {
	case err != nil && errors.Is(err, context.DeadlineExceeded) && r.Context().Err() == nil:
		writeJSON(w, http.StatusGatewayTimeout, apiError{
			Error: fmt.Sprintf("task %s did not finish within %s; it goes on: follow it at GET /v1/queues/%s/tasks/%s", id, timeout, q.Name(), id),
			Code:  "timeout", ID: id, Task: viewInfo(in),
		})
	case err != nil:
		internalError(w, err)
	case in.State == task.Succeeded:
		writeJSON(w, http.StatusOK, map[string]any{"id": id, "state": in.State, "result": in.Result, "task": viewInfo(in)})
	default:
		msg := fmt.Sprintf("task %s is %s", id, in.State)
		if in.Error != "" {
			msg += ": " + in.Error
		}
		writeJSON(w, http.StatusUnprocessableEntity, apiError{Error: msg, Code: "task_" + string(in.State), ID: id, Task: viewInfo(in)})
	}
}

// findTask returns the queue of the request's task: the one in the path,
// else the one holding the task. It answers the request and returns nil
// when there is none.
func (h *handler) findTask(w http.ResponseWriter, r *http.Request) (*rawQueue, string) {
	id := r.PathValue("id")
	if r.PathValue("queue") != "" {
		q := h.lookupQueue(w, r)
		return q, id
	}
	q, err := task.Find(r.Context(), h.a, id)
	if errors.Is(err, task.ErrNotFound) {
		writeError(w, http.StatusNotFound, "unknown_task", fmt.Sprintf("no task %q in any queue of app %q", id, h.a.Name()))
		return nil, id
	}
	if err != nil {
		internalError(w, err)
		return nil, id
	}
	return q, id
}

// taskError answers an error of a task operation.
func taskError(w http.ResponseWriter, err error) {
	switch {
	case errors.Is(err, task.ErrNotFound):
		writeError(w, http.StatusNotFound, "unknown_task", err.Error())
	case errors.Is(err, task.ErrFinished):
		writeError(w, http.StatusConflict, "wrong_state", err.Error())
	default:
		internalError(w, err)
	}
}

func (h *handler) taskInfo(w http.ResponseWriter, r *http.Request) {
	q, id := h.findTask(w, r)
	if q == nil {
		return
	}
	in, err := q.Info(r.Context(), id)
	if err != nil {
		taskError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, viewInfo(in))
}

func (h *handler) cancel(w http.ResponseWriter, r *http.Request) {
	h.changeTask(w, r, (*rawQueue).Cancel)
}

// deleteTask deletes an ended task (task.Queue.Delete).
func (h *handler) deleteTask(w http.ResponseWriter, r *http.Request) {
	h.changeTask(w, r, (*rawQueue).Delete)
}

// changeTask runs change on the request's task and answers the state the
// task was in.
func (h *handler) changeTask(w http.ResponseWriter, r *http.Request, change func(*rawQueue, context.Context, string) (task.State, error)) {
	q, id := h.findTask(w, r)
	if q == nil {
		return
	}
	before, err := change(q, r.Context(), id)
	if err != nil {
		taskError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"id": id, "state_before": before})
}

// requeueDead requeues every task of the queue that is dead
// (task.Queue.RequeueDead).
func (h *handler) requeueDead(w http.ResponseWriter, r *http.Request) {
	h.changeCount(w, r, "requeued", (*rawQueue).RequeueDead)
}

// deleteDead deletes every task of the queue that is dead
// (task.Queue.DeleteDead).
func (h *handler) deleteDead(w http.ResponseWriter, r *http.Request) {
	h.changeCount(w, r, "deleted", (*rawQueue).DeleteDead)
}

// changeCount runs change on the request's queue and answers how many
// tasks it changed, as field.
func (h *handler) changeCount(w http.ResponseWriter, r *http.Request, field string, change func(*rawQueue, context.Context) (int, error)) {
	q := h.lookupQueue(w, r)
	if q == nil {
		return
	}
	n, err := change(q, r.Context())
	if err != nil {
		internalError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"queue": q.Name(), field: n})
}

func (h *handler) requeue(w http.ResponseWriter, r *http.Request) {
	q, id := h.findTask(w, r)
	if q == nil {
		return
	}
	if err := q.Requeue(r.Context(), id); err != nil {
		taskError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"id": id, "state": task.Pending})
}

// queueRow is one queue of GET /v1/queues.
type queueRow struct {
	Queue       string               `json:"queue"`
	Counts      map[task.State]int64 `json:"counts"`
	Definition  definitionView       `json:"definition"`
	PausedAt    *time.Time           `json:"paused_at"` // null when not paused
	Rate        rateRow              `json:"rate"`
	Concurrency concurrencyRow       `json:"concurrency"`
	// GlobalConcurrency caps the queue's running tasks over all workers;
	// 0 is no cap.
	GlobalConcurrency int       `json:"global_concurrency"`
	Events            eventsRow `json:"events"` // the events setting (see setEvents)
	Leader            string    `json:"leader"` // the queue leader's worker ID; "" when none
	// Finished is the tasks that reached a final state in each 10 s of the
	// last minute, from the server's counters (GET /v1/queues only).
	Finished *inspect.Finished `json:"finished,omitempty"`
}

// concurrencyRow is how many tasks each worker of a queue runs at once: set
// live, or the definition's.
type concurrencyRow struct {
	N    int  `json:"n"`
	Live bool `json:"live"`
}

// rateRow is the rate limit that applies to a queue: set live, or the
// definition's (n 0: none).
type rateRow struct {
	N      int    `json:"n"`
	Window string `json:"window"` // a Go duration
	Live   bool   `json:"live"`
}

// rowOf is the row of a queue's summary.
func rowOf(sum task.Summary) queueRow {
	r := queueRow{Queue: sum.Definition.Name, Counts: sum.Counts, Definition: viewDefinition(sum.Definition),
		Rate:              rateRow{N: sum.Rate.N, Window: sum.Rate.Window.String(), Live: sum.LiveRate},
		Concurrency:       concurrencyRow{N: sum.Concurrency, Live: sum.LiveConcurrency},
		GlobalConcurrency: sum.GlobalConcurrency, Leader: sum.Leader,
		Events: eventsRow{Enabled: sum.EventsCap > 0, MaxLen: sum.EventsCap}}
	if sum.Paused {
		at := sum.PausedAt.UTC()
		r.PausedAt = &at
	}
	return r
}

func (h *handler) queues(w http.ResponseWriter, r *http.Request) {
	sums, err := task.Summaries(r.Context(), h.a)
	if err != nil {
		internalError(w, err)
		return
	}
	rows := make([]queueRow, 0, len(sums))
	names := make([]string, 0, len(sums))
	for _, sum := range sums {
		rows = append(rows, rowOf(sum))
		names = append(names, sum.Definition.Name)
	}
	fin, err := h.in.Finished(r.Context(), names)
	if err != nil {
		internalError(w, err)
		return
	}
	for j := range rows {
		rows[j].Finished = &fin[j]
	}
	writeJSON(w, http.StatusOK, map[string]any{"queues": rows})
}

func (h *handler) queue(w http.ResponseWriter, r *http.Request) {
	if q := h.lookupQueue(w, r); q != nil {
		answerQueue(w, r, q)
	}
}

// answerQueue answers q's row, as GET /v1/queues/{queue} does.
func answerQueue(w http.ResponseWriter, r *http.Request, q *rawQueue) {
	sum, err := q.Summary(r.Context())
	if err != nil {
		internalError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, rowOf(sum))
}

// changeQueue runs change on the queue named by the path and answers the
// queue as queue does. change answers the request itself when it returns
// errAnswered (a bad body, say); another error is a 500.
func (h *handler) changeQueue(w http.ResponseWriter, r *http.Request, change func(ctx context.Context, q *rawQueue) error) {
	q := h.lookupQueue(w, r)
	if q == nil {
		return
	}
	switch err := change(r.Context(), q); {
	case errors.Is(err, errAnswered):
	case err != nil:
		internalError(w, err)
	default:
		answerQueue(w, r, q)
	}
}

// errAnswered is what a changeQueue function returns once it answered.
var errAnswered = errors.New("answered")

// readObject reads the request's body, one JSON object, into v; otherwise
// it answers the request and returns errAnswered.
func (h *handler) readObject(w http.ResponseWriter, r *http.Request, v any) error {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		bodyError(w, err, h.opts.MaxBody)
		return errAnswered
	}
	if !h.decodeObject(w, body, v) {
		return errAnswered
	}
	return nil
}

// refuse answers 400 with code and err's text, and returns errAnswered.
func refuse(w http.ResponseWriter, code string, err error) error {
	writeError(w, http.StatusBadRequest, code, err.Error())
	return errAnswered
}

// setRate sets the queue's rate limit live (task.Queue.SetRate): body
// {"n": N, "window": "1s"}; {"n": 0} lifts the limit.
func (h *handler) setRate(w http.ResponseWriter, r *http.Request) {
	h.changeQueue(w, r, func(ctx context.Context, q *rawQueue) error {
		var req struct {
			N      *int     `json:"n"`
			Window duration `json:"window"`
		}
		if err := h.readObject(w, r, &req); err != nil {
			return err
		}
		if req.N == nil {
			return refuse(w, "bad_json", errors.New(`request body: field "n" is missing (0 for no limit)`))
		}
		err := q.SetRate(ctx, *req.N, time.Duration(req.Window))
		if errors.Is(err, task.ErrBadSetting) {
			return refuse(w, "bad_rate", err)
		}
		return err
	})
}

// clearRate removes the rate limit set live (task.Queue.ClearRate): each
// worker's Rate option applies again.
func (h *handler) clearRate(w http.ResponseWriter, r *http.Request) {
	h.changeQueue(w, r, func(ctx context.Context, q *rawQueue) error { return q.ClearRate(ctx) })
}

// setConcurrency sets the queue's concurrency per worker live
// (task.Queue.SetConcurrency): body {"n": N}.
func (h *handler) setConcurrency(w http.ResponseWriter, r *http.Request) {
	h.changeQueue(w, r, func(ctx context.Context, q *rawQueue) error {
		var req struct {
			N *int `json:"n"`
		}
		if err := h.readObject(w, r, &req); err != nil {
			return err
		}
		if req.N == nil {
			return refuse(w, "bad_json", errors.New(`request body: field "n" is missing`))
		}
		err := q.SetConcurrency(ctx, *req.N)
		if errors.Is(err, task.ErrBadSetting) {
			return refuse(w, "bad_concurrency", err)
		}
		return err
	})
}

// setGlobalConcurrency caps the queue's running tasks over all workers,
// live (task.Queue.SetGlobalConcurrency): body {"n": N}, 0 lifts the cap.
func (h *handler) setGlobalConcurrency(w http.ResponseWriter, r *http.Request) {
	h.changeQueue(w, r, func(ctx context.Context, q *rawQueue) error {
		var req struct {
			N *int `json:"n"`
		}
		if err := h.readObject(w, r, &req); err != nil {
			return err
		}
		if req.N == nil {
			return refuse(w, "bad_json", errors.New(`request body: field "n" is missing`))
		}
		err := q.SetGlobalConcurrency(ctx, *req.N)
		if errors.Is(err, task.ErrBadSetting) {
			return refuse(w, "bad_concurrency", err)
		}
		return err
	})
}

// clearConcurrency removes the concurrency set live
// (task.Queue.ClearConcurrency): each worker's own applies again.
func (h *handler) clearConcurrency(w http.ResponseWriter, r *http.Request) {
	h.changeQueue(w, r, func(ctx context.Context, q *rawQueue) error { return q.ClearConcurrency(ctx) })
}

// pause pauses the queue (task.Queue.Pause) and answers it as queue does.
func (h *handler) pause(w http.ResponseWriter, r *http.Request) {
	h.changeQueue(w, r, func(ctx context.Context, q *rawQueue) error { return q.Pause(ctx) })
}

// resume resumes the queue (task.Queue.Resume) and answers it as queue
// does.
func (h *handler) resume(w http.ResponseWriter, r *http.Request) {
	h.changeQueue(w, r, func(ctx context.Context, q *rawQueue) error { return q.Resume(ctx) })
}
