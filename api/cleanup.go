package api

import (
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/leatdev/leat/task"
)

// drain deletes the queue's tasks that wait to run (task.Queue.Drain) and
// answers how many.
func (h *handler) drain(w http.ResponseWriter, r *http.Request) {
	h.changeCount(w, r, "deleted", (*rawQueue).Drain)
}

// clean deletes the queue's ended tasks of a state that ended at least a
// given time ago (task.Queue.Clean): body {"state": S, "older_than": D}.
func (h *handler) clean(w http.ResponseWriter, r *http.Request) {
	q := h.lookupQueue(w, r)
	if q == nil {
		return
	}
	var req struct {
		State     *string `json:"state"`
		OlderThan string  `json:"older_than"`
	}
	if err := h.readObject(w, r, &req); err != nil {
		return
	}
	if req.State == nil || !task.State(*req.State).Final() {
		_ = refuse(w, "bad_request", errors.New(`request body: field "state" must be succeeded, failed, cancelled or dead`))
		return
	}
	var age time.Duration
	if req.OlderThan != "" {
		d, err := time.ParseDuration(req.OlderThan)
		if err != nil || d < 0 {
			_ = refuse(w, "bad_request", fmt.Errorf(`request body: field "older_than" %q: want a duration of at least 0 ("24h")`, req.OlderThan))
			return
		}
		age = d
	}
	n, err := q.Clean(r.Context(), task.State(*req.State), age)
	if err != nil {
		internalError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"queue": q.Name(), "deleted": n})
}

// obliterate deletes the whole queue (task.Queue.Obliterate); ?force=true
// even while workers run it, else 409 queue_running.
func (h *handler) obliterate(w http.ResponseWriter, r *http.Request) {
	q := h.lookupQueue(w, r)
	if q == nil {
		return
	}
	force := false
	switch v := r.URL.Query().Get("force"); v {
	case "", "false":
	case "true":
		force = true
	default:
		writeError(w, http.StatusBadRequest, "bad_request", fmt.Sprintf("force=%q: want true or false", v))
		return
	}
	n, err := q.Obliterate(r.Context(), force)
	if errors.Is(err, task.ErrQueueRunning) {
		writeError(w, http.StatusConflict, "queue_running", err.Error())
		return
	}
	if err != nil {
		internalError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"queue": q.Name(), "deleted_keys": n})
}
