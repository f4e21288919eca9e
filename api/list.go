package api

import (
	"fmt"
	"net/http"
	"strconv"

	"github.com/leatdev/leat/task"
)

// DefaultListLimit is the number of tasks GET /v1/queues/{queue}/tasks
// answers without ?limit.
const DefaultListLimit = 20

// listTasks answers the tasks of one listing of a queue (?state=dead,
// recent or scheduled; ?limit from 1 to task.MaxList), read from the
// sorted set the queue keeps for it: its cost grows with the limit, never
// with the queue.
func (h *handler) listTasks(w http.ResponseWriter, r *http.Request) {
	which := task.Listing(r.URL.Query().Get("state"))
	switch which {
	case task.ListDead, task.ListRecent, task.ListScheduled:
	case "":
		writeError(w, http.StatusBadRequest, "bad_state", "state is missing: give ?state=dead, recent or scheduled")
		return
	default:
		writeError(w, http.StatusBadRequest, "bad_state", fmt.Sprintf("state %q cannot be listed: give dead, recent or scheduled", which))
		return
	}
	limit := DefaultListLimit
	if s := r.URL.Query().Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > task.MaxList {
			writeError(w, http.StatusBadRequest, "bad_limit", fmt.Sprintf("limit %q: a whole number from 1 to %d", s, task.MaxList))
			return
		}
		limit = n
	}
	q := h.lookupQueue(w, r)
	if q == nil {
		return
	}
	tasks, err := q.List(r.Context(), which, limit)
	if err != nil {
		internalError(w, err)
		return
	}
	views := make([]*infoView, len(tasks))
	for i, in := range tasks {
		views[i] = viewInfo(in)
	}
	writeJSON(w, http.StatusOK, map[string]any{"queue": q.Name(), "state": which, "limit": limit, "tasks": views})
}
