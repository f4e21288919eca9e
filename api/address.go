package api

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/leatdev/leat/internal/rdb"
	"github.com/leatdev/leat/task"
)

// lookupAddress returns the queue an enqueue's path names: "{queue}", or
// "{queue}.{level}" for one of its priority levels (task.LookupLevel),
// whose level it adds to opts; or it answers the request and returns nil.
// A level in the path and another "priority" in the body is a bad request.
func (h *handler) lookupAddress(w http.ResponseWriter, r *http.Request, opts []task.EnqueueOption, priority string) (*rawQueue, []task.EnqueueOption) {
	name := r.PathValue("queue")
	if err := rdb.CheckName("task queue", name); err != nil {
		writeError(w, http.StatusBadRequest, "bad_name", err.Error())
		return nil, nil
	}
	q, level, err := task.LookupLevel(r.Context(), h.a, name)
	switch {
	case errors.Is(err, task.ErrUnknownQueue):
		writeError(w, http.StatusNotFound, "unknown_queue", fmt.Sprintf("unknown task queue %q: no program of app %q declared it", name, h.a.Name()))
		return nil, nil
	case errors.Is(err, task.ErrUnknownLevel):
		writeError(w, http.StatusNotFound, "unknown_level", err.Error())
		return nil, nil
	case err != nil:
		schemaError(w, err)
		return nil, nil
	}
	if level == "" {
		return q, opts
	}
	if priority != "" && priority != level {
		writeError(w, http.StatusBadRequest, "bad_task", fmt.Sprintf("%s names level %q of queue %s, the body's priority %q another", name, level, q.Name(), priority))
		return nil, nil
	}
	return q, append(opts, task.Priority(level))
}
