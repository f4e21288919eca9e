package api

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"

	"github.com/leatdev/leat/app"
	"github.com/leatdev/leat/inspect"
	"github.com/leatdev/leat/internal/core"
	"github.com/leatdev/leat/internal/rdb"
)

// The dead letters of a stream processor: listed, shown, replayed and
// purged (inspect.Inspector.DeadLetters, App.ReplayDead, App.DeleteDead).

// DefaultDeadLimit is the number of dead letters GET .../dead answers
// without ?limit.
const DefaultDeadLimit = 20

// deadNames checks the path's stream and processor; otherwise it answers
// 400 and returns false.
func deadNames(w http.ResponseWriter, r *http.Request) (stream, processor string, ok bool) {
	stream, processor = r.PathValue("stream"), r.PathValue("processor")
	for _, n := range []struct{ what, v string }{{"stream", stream}, {"processor", processor}} {
		if err := rdb.CheckName(n.what, n.v); err != nil {
			writeError(w, http.StatusBadRequest, "bad_name", err.Error())
			return "", "", false
		}
	}
	return stream, processor, true
}

// listDead answers a page of a processor's dead letters, oldest first
// (?limit from 1 to inspect.MaxDeadList, ?after the cursor of the last
// page's next).
func (h *handler) listDead(w http.ResponseWriter, r *http.Request) {
	stream, proc, ok := deadNames(w, r)
	if !ok {
		return
	}
	limit := DefaultDeadLimit
	if s := r.URL.Query().Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > inspect.MaxDeadList {
			writeError(w, http.StatusBadRequest, "bad_limit", fmt.Sprintf("limit %q: a whole number from 1 to %d", s, inspect.MaxDeadList))
			return
		}
		limit = n
	}
	page, err := h.in.DeadLetters(r.Context(), stream, proc, r.URL.Query().Get("after"), limit)
	switch {
	case errors.Is(err, inspect.ErrBadDeadList):
		writeError(w, http.StatusBadRequest, "bad_cursor", err.Error())
	case err != nil:
		internalError(w, err)
	default:
		writeJSON(w, http.StatusOK, page)
	}
}

// showDead answers one dead letter whole, its record decoded.
func (h *handler) showDead(w http.ResponseWriter, r *http.Request) {
	stream, proc, ok := deadNames(w, r)
	if !ok {
		return
	}
	d, err := h.in.DeadLetter(r.Context(), stream, proc, r.PathValue("id"))
	switch {
	case errors.Is(err, inspect.ErrNoDeadLetter):
		writeError(w, http.StatusNotFound, "unknown_dead_letter", err.Error())
	case err != nil:
		internalError(w, err)
	default:
		writeJSON(w, http.StatusOK, d)
	}
}

// deadRequest is the body of a replay or a purge: ids, or all.
type deadRequest struct {
	IDs []string `json:"ids"`
	All bool     `json:"all"`
}

// readDeadRequest reads ids or all from the query (?id=ID&id=ID2, ?all=true)
// or else from the JSON body; otherwise it answers and returns false.
func (h *handler) readDeadRequest(w http.ResponseWriter, r *http.Request) (deadRequest, bool) {
	var req deadRequest
	q := r.URL.Query()
	if q.Has("id") || q.Has("all") {
		req.IDs = q["id"]
		if s := q.Get("all"); s != "" {
			all, err := strconv.ParseBool(s)
			if err != nil {
				writeError(w, http.StatusBadRequest, "bad_request", fmt.Sprintf("all %q: true or false", s))
				return req, false
			}
			req.All = all
		}
	} else if err := h.readObject(w, r, &req); err != nil {
		return req, false
	}
	if req.All == (len(req.IDs) > 0) {
		writeError(w, http.StatusBadRequest, "bad_request", "give dead-letter ids, or all: true, not both")
		return req, false
	}
	return req, true
}

// replayDead sends dead letters back to their partitions.
func (h *handler) replayDead(w http.ResponseWriter, r *http.Request) {
	h.changeDeadLetters(w, r, "replayed", h.a.ReplayDead, h.a.ReplayAllDead)
}

// purgeDead deletes dead letters.
func (h *handler) purgeDead(w http.ResponseWriter, r *http.Request) {
	h.changeDeadLetters(w, r, "purged", h.a.DeleteDead, h.a.DeleteAllDead)
}

func (h *handler) changeDeadLetters(w http.ResponseWriter, r *http.Request, field string,
	some func(ctx context.Context, stream, processor string, ids ...string) (app.DeadResult, error),
	all func(ctx context.Context, stream, processor string) (int, error)) {
	stream, proc, ok := deadNames(w, r)
	if !ok {
		return
	}
	req, ok := h.readDeadRequest(w, r)
	if !ok {
		return
	}
	res := app.DeadResult{Missing: []string{}}
	var err error
	if req.All {
		res.Done, err = all(r.Context(), stream, proc)
	} else {
		res, err = some(r.Context(), stream, proc, req.IDs...)
	}
	switch {
	case errors.Is(err, app.ErrBadDeadLetter):
		writeError(w, http.StatusBadRequest, "bad_request", err.Error())
	case errors.Is(err, core.ErrUnknownStream):
		writeError(w, http.StatusNotFound, "unknown_stream", err.Error())
	case errors.Is(err, app.ErrNotReplayable):
		writeError(w, http.StatusConflict, "not_replayable", err.Error())
	case err != nil:
		internalError(w, err)
	default:
		writeJSON(w, http.StatusOK, map[string]any{"stream": stream, "processor": proc, field: res.Done, "missing": res.Missing})
	}
}
