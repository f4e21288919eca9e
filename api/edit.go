package api

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/leatdev/leat/task"
)

// editTask changes a task that waits to run (task.Queue.SetPayload,
// SetPriority, RunNow, Reschedule): body {"payload": P, "priority": L,
// "run_now": true | "delay": D | "at": T}, applied in that order; it
// answers the task as GET does.
func (h *handler) editTask(w http.ResponseWriter, r *http.Request) {
	q, id := h.findTask(w, r)
	if q == nil {
		return
	}
	var req struct {
		Payload  json.RawMessage `json:"payload"`
		Priority *string         `json:"priority"`
		RunNow   bool            `json:"run_now"`
		Delay    string          `json:"delay"`
		At       *time.Time      `json:"at"`
	}
	if err := h.readObject(w, r, &req); err != nil {
		return
	}
	timing := 0
	for _, set := range []bool{req.RunNow, req.Delay != "", req.At != nil} {
		if set {
			timing++
		}
	}
	if timing > 1 {
		_ = refuse(w, "bad_request", errors.New(`request body: "run_now", "delay" and "at" are exclusive`))
		return
	}
	if timing == 0 && req.Payload == nil && req.Priority == nil {
		_ = refuse(w, "bad_request", errors.New(`request body: say what to change: "payload", "priority", "run_now", "delay" or "at"`))
		return
	}
	var delay time.Duration
	if req.Delay != "" {
		d, err := time.ParseDuration(req.Delay)
		if err != nil || d < 0 {
			_ = refuse(w, "bad_request", fmt.Errorf(`request body: field "delay" %q: want a duration of at least 0 ("1h")`, req.Delay))
			return
		}
		delay = d
	}
	ctx := r.Context()
	var err error
	if req.Payload != nil {
		err = q.SetPayload(ctx, id, req.Payload)
	}
	if err == nil && req.Priority != nil {
		err = q.SetPriority(ctx, id, *req.Priority)
	}
	switch {
	case err != nil:
	case req.RunNow:
		err = q.RunNow(ctx, id)
	case req.Delay != "":
		err = q.Reschedule(ctx, id, time.Now().Add(delay))
	case req.At != nil:
		err = q.Reschedule(ctx, id, *req.At)
	}
	switch {
	case errors.Is(err, task.ErrKeyedInLine):
		writeError(w, http.StatusConflict, "wrong_state", err.Error())
		return
	case errors.Is(err, task.ErrBadEdit):
		_ = refuse(w, "bad_task", err) // a payload or priority the queue refuses
		return
	case err != nil:
		taskError(w, err)
		return
	}
	in, err := q.Info(ctx, id)
	if err != nil {
		taskError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, viewInfo(in))
}
