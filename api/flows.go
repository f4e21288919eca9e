package api

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/leatdev/leat/task"
)

// maxFlowList bounds GET /v1/flows's limit.
const maxFlowList = 1000

// submitFlow submits the flow of the body, a task.FlowSpec, and answers its
// ID: {"id": ID}. A flow refused for bad input (names, queues, parents, a
// cycle, options, payloads) is 400 bad_flow, with every mistake; a flow
// whose ID exists is 409 duplicate.
func (h *handler) submitFlow(w http.ResponseWriter, r *http.Request) {
	if id, ok := h.submitSpec(w, r); ok {
		writeJSON(w, http.StatusOK, map[string]any{"id": id})
	}
}

// submitSpec reads the body's task.FlowSpec and submits it. It answers the
// request and returns false when the flow was not submitted.
func (h *handler) submitSpec(w http.ResponseWriter, r *http.Request) (string, bool) {
	var spec task.FlowSpec
	if err := h.readObject(w, r, &spec); err != nil {
		return "", false
	}
	f, err := task.BuildFlow(r.Context(), h.a, spec, nil)
	var id string
	if err == nil {
		if id, err = f.Submit(r.Context()); err == nil {
			return id, true
		}
	}
	switch {
	case errors.Is(err, task.ErrInvalidFlow):
		writeError(w, http.StatusBadRequest, "bad_flow", strings.TrimPrefix(err.Error(), task.ErrInvalidFlow.Error()+": "))
	case errors.Is(err, task.ErrDuplicate):
		writeJSON(w, http.StatusConflict, apiError{Error: err.Error(), Code: "duplicate", ID: id})
	default:
		internalError(w, err)
	}
	return "", false
}

// runFlow submits the flow of the body, as submitFlow, and holds the
// request open until the flow ends or ?timeout passes (default
// DefaultTimeout, at most MaxWait), as runsync does for a task. A flow that
// succeeded is answered 200 {"id", "state", "results" (its sinks'), "flow"
// (task.FlowInfo)}; one that failed or was cancelled 422 flow_failed or
// flow_cancelled, with the flow; one still running at the timeout 504
// timeout, with the flow as it is then (it goes on).
func (h *handler) runFlow(w http.ResponseWriter, r *http.Request) {
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
	id, ok := h.submitSpec(w, r)
	if !ok {
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), timeout)
	defer cancel()
	in, err := task.WaitFlow(ctx, h.a, id)
	if errors.Is(err, context.DeadlineExceeded) && r.Context().Err() == nil {
		if in, err = task.GetFlow(r.Context(), h.a, id); err == nil {
			writeJSON(w, http.StatusGatewayTimeout, apiError{
				Error: fmt.Sprintf("flow %s did not end within %s; it goes on: follow it at GET /v1/flows/%s?wait=30s", id, timeout, id),
				Code:  "timeout", ID: id, Flow: in,
			})
			return
		}
	}
	switch {
	case err != nil:
		internalError(w, err)
	case in.State == task.FlowSucceeded:
		writeJSON(w, http.StatusOK, map[string]any{"id": id, "state": in.State, "results": in.Results, "flow": in})
	default:
		msg := fmt.Sprintf("flow %s is %s", id, in.State)
		if in.FailedBy != "" {
			msg += " (node " + in.FailedBy + ")"
		}
		writeJSON(w, http.StatusUnprocessableEntity, apiError{Error: msg, Code: "flow_" + string(in.State), ID: id, Flow: in})
	}
}

// listFlows answers the app's flows, newest first: ?state= one state
// (default all but those being submitted), ?limit= at most (default 100).
func (h *handler) listFlows(w http.ResponseWriter, r *http.Request) {
	limit := 100
	if s := r.URL.Query().Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > maxFlowList {
			writeError(w, http.StatusBadRequest, "bad_limit", fmt.Sprintf("limit %q: want 1 to %d", s, maxFlowList))
			return
		}
		limit = n
	}
	state := task.FlowState(r.URL.Query().Get("state"))
	switch state {
	case "", task.FlowSubmitting, task.FlowRunning, task.FlowSucceeded, task.FlowFailed, task.FlowCancelled:
	default:
		writeError(w, http.StatusBadRequest, "bad_request", fmt.Sprintf("state %q: want submitting, running, succeeded, failed or cancelled", state))
		return
	}
	flows, err := task.ListFlows(r.Context(), h.a, state, limit)
	if err != nil {
		internalError(w, err)
		return
	}
	if flows == nil {
		flows = []task.FlowSummary{}
	}
	writeJSON(w, http.StatusOK, map[string]any{"flows": flows})
}

// waitParam reads GET /v1/flows/{id}'s ?wait: a positive duration of at
// most MaxWait, 0 when absent.
func (h *handler) waitParam(r *http.Request) (time.Duration, error) {
	s := r.URL.Query().Get("wait")
	if s == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 || d > h.opts.MaxWait {
		return 0, fmt.Errorf("wait %q must be a positive duration of at most %s", s, h.opts.MaxWait)
	}
	return d, nil
}

// flowWait is how long GET /v1/flows/{id} may answer for (holdOpen): its
// ?wait; without one (or an invalid one, answered at once) a millisecond,
// so the answer's write stays bounded by holdOpen's margin.
func (h *handler) flowWait(r *http.Request) time.Duration {
	if d, err := h.waitParam(r); err == nil && d > 0 {
		return d
	}
	return time.Millisecond
}

// getFlow answers a flow's status (task.FlowInfo); with ?wait=DURATION it
// waits up to then for the flow to end first, and answers it as it is
// then.
func (h *handler) getFlow(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	wait, err := h.waitParam(r)
	if err != nil {
		writeError(w, http.StatusBadRequest, "bad_timeout", err.Error())
		return
	}
	var in *task.FlowInfo
	if wait > 0 {
		ctx, cancel := context.WithTimeout(r.Context(), wait)
		in, err = task.WaitFlow(ctx, h.a, id)
		cancel()
		if errors.Is(err, context.DeadlineExceeded) && r.Context().Err() == nil {
			in, err = task.GetFlow(r.Context(), h.a, id)
		}
	} else {
		in, err = task.GetFlow(r.Context(), h.a, id)
	}
	switch {
	case errors.Is(err, task.ErrNotFound):
		writeError(w, http.StatusNotFound, "unknown_flow", err.Error())
	case err != nil:
		internalError(w, err)
	default:
		writeJSON(w, http.StatusOK, in)
	}
}

// cancelFlow cancels a running flow (task.CancelFlow) and answers it.
func (h *handler) cancelFlow(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	err := task.CancelFlow(r.Context(), h.a, id)
	switch {
	case errors.Is(err, task.ErrNotFound):
		writeError(w, http.StatusNotFound, "unknown_flow", err.Error())
		return
	case errors.Is(err, task.ErrFinished):
		writeError(w, http.StatusConflict, "wrong_state", err.Error())
		return
	case err != nil:
		internalError(w, err)
		return
	}
	in, err := task.GetFlow(r.Context(), h.a, id)
	if err != nil {
		internalError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, in)
}
