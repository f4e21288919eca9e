package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"

	"github.com/leatdev/leat/inspect"
	"github.com/leatdev/leat/internal/core"
	"github.com/leatdev/leat/internal/rdb"
	"github.com/leatdev/leat/internal/schema"
)

// maxRecords bounds the records of one send.
const maxRecords = 10_000

// openStream returns stream name: declared by the app's code, else opened
// from the app's registry in Redis with the schema its program recorded
// there (read again for each request). It answers the request and returns
// nil when it cannot.
func (h *handler) openStream(w http.ResponseWriter, r *http.Request, name string) *core.Core {
	st := h.lookupStream(w, r, name)
	if st == nil {
		return nil
	}
	if err := st.LoadSchema(r.Context()); err != nil {
		schemaError(w, err)
		return nil
	}
	return st
}

// lookupStream is openStream without the schema.
func (h *handler) lookupStream(w http.ResponseWriter, r *http.Request, name string) *core.Core {
	if err := rdb.CheckName("stream", name); err != nil {
		writeError(w, http.StatusBadRequest, "bad_name", err.Error())
		return nil
	}
	cat, ok := core.UnwrapCatalog(h.a.Catalog())
	if !ok {
		writeError(w, http.StatusInternalServerError, "internal", "the app has no stream catalog")
		return nil
	}
	h.openMu.Lock()
	defer h.openMu.Unlock()
	if st, ok := cat.Lookup(name); ok {
		return st
	}
	cfg := h.a.Config()
	def, err := core.LoadDefinition(r.Context(), h.a.Client(), rdb.NewKeySpace(cfg.KeyPrefix, cfg.Name).Registry(), name)
	switch {
	case errors.Is(err, core.ErrUnknownStream):
		writeError(w, http.StatusNotFound, "unknown_stream", fmt.Sprintf("unknown stream %q: it is not in the registry of app %q", name, cfg.Name))
		return nil
	case err != nil:
		internalError(w, err)
		return nil
	case def.KeyField == "":
		writeError(w, http.StatusUnprocessableEntity, "no_key_field", fmt.Sprintf("stream %q is keyed by a Go function, so its JSON records cannot be routed: send them from the app's code", name))
		return nil
	}
	st, err := core.Open(cat, def)
	if err != nil {
		internalError(w, fmt.Errorf("open stream %q: %w", name, err))
		return nil
	}
	return st
}

// sendEvents sends one JSON record, or an array of them, and answers their
// entry IDs in order.
func (h *handler) sendEvents(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		bodyError(w, err, h.opts.MaxBody)
		return
	}
	st := h.openStream(w, r, r.PathValue("stream"))
	if st == nil {
		return
	}
	body = bytes.TrimSpace(body)
	records := eventRecords(w, body, h.opts.MaxBody)
	if records == nil {
		return
	}
	entries := make([]core.Entry, len(records))
	for i, rec := range records {
		e, err := st.EncodeJSON(rec, nil)
		if err != nil {
			msg := "record: " + err.Error()
			if len(records) > 1 || body[0] == '[' {
				msg = fmt.Sprintf("record %d: %v", i, err)
			}
			writeError(w, http.StatusBadRequest, "bad_record", msg)
			return
		}
		entries[i] = e
	}
	ids, err := st.SendEntries(r.Context(), entries)
	switch {
	case errors.Is(err, core.ErrFull):
		writeError(w, http.StatusServiceUnavailable, "stream_full", err.Error())
		return
	case errors.Is(err, core.ErrEncode):
		writeError(w, http.StatusBadRequest, "bad_record", err.Error())
		return
	case err != nil:
		internalError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"ids": ids})
}

// eventRecords returns the records of a send's body (trimmed): one JSON
// value, or an array of 1 to maxRecords of them. It answers the request and
// returns nil when the body is not that.
func eventRecords(w http.ResponseWriter, body []byte, maxBody int64) []json.RawMessage {
	var records []json.RawMessage
	switch {
	case len(body) == 0:
		bodyError(w, errEmpty, maxBody)
		return nil
	case body[0] == '[':
		if err := json.Unmarshal(body, &records); err != nil {
			bodyError(w, err, maxBody)
			return nil
		}
		if len(records) == 0 {
			writeError(w, http.StatusBadRequest, "bad_json", "request body: an empty array: send at least one record")
			return nil
		}
		if len(records) > maxRecords {
			writeError(w, http.StatusRequestEntityTooLarge, "too_many", fmt.Sprintf("%d records: at most %d a request", len(records), maxRecords))
			return nil
		}
	default:
		var v any
		if err := json.Unmarshal(body, &v); err != nil {
			bodyError(w, err, maxBody)
			return nil
		}
		records = []json.RawMessage{body}
	}
	return records
}

func (h *handler) overview(w http.ResponseWriter, r *http.Request) {
	o, err := h.in.Overview(r.Context())
	if err != nil {
		internalError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, o)
}

func (h *handler) streamReport(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("stream")
	if err := rdb.CheckName("stream", name); err != nil {
		writeError(w, http.StatusBadRequest, "bad_name", err.Error())
		return
	}
	rep, err := h.in.Stream(r.Context(), name)
	if errors.Is(err, inspect.ErrUnknownStream) {
		writeError(w, http.StatusNotFound, "unknown_stream", fmt.Sprintf("unknown stream %q in app %q", name, h.a.Name()))
		return
	}
	if err != nil {
		internalError(w, err)
		return
	}
	// The rate entries arrive at, from the entries' IDs: a page loaded
	// after a burst sees it.
	ap, err := h.in.Appended(r.Context(), name, len(rep.Partitions))
	if err != nil {
		internalError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, struct {
		*inspect.StreamReport
		Appended inspect.Appended `json:"appended"`
	}{rep, ap})
}

// tableValues answers the values of the ?key= keys (1 to 100) in a
// processor's table, as JSON (null for a key without a value).
func (h *handler) tableValues(w http.ResponseWriter, r *http.Request) {
	names := []struct{ what, v string }{{"stream", r.PathValue("stream")}, {"processor", r.PathValue("processor")}, {"table", r.PathValue("table")}}
	for _, n := range names {
		if err := rdb.CheckName(n.what, n.v); err != nil {
			writeError(w, http.StatusBadRequest, "bad_name", err.Error())
			return
		}
	}
	ks := r.URL.Query()["key"]
	if len(ks) == 0 || len(ks) > inspect.MaxTableKeys {
		writeError(w, http.StatusBadRequest, "bad_keys", fmt.Sprintf("%d keys: give 1 to %d, as ?key=K&key=K2", len(ks), inspect.MaxTableKeys))
		return
	}
	values, err := h.in.TableValues(r.Context(), names[0].v, names[1].v, names[2].v, ks)
	switch {
	case errors.Is(err, inspect.ErrUnknownStream):
		writeError(w, http.StatusNotFound, "unknown_stream", err.Error())
		return
	case errors.Is(err, inspect.ErrUnknownTable):
		writeError(w, http.StatusNotFound, "unknown_table", err.Error())
		return
	case err != nil:
		internalError(w, err)
		return
	}
	out := make(map[string]json.RawMessage, len(ks))
	for i, k := range ks {
		out[k] = values[i]
	}
	writeJSON(w, http.StatusOK, map[string]any{"values": out})
}

// internalError answers an error of the server or of Redis. The answer
// says only that: the error, which may name Redis's address or carry what
// Redis said, goes to the app's log with the endpoint.
func internalError(w http.ResponseWriter, err error) {
	log, route := slog.Default(), ""
	if m, ok := w.(*muxWriter); ok && m.log != nil {
		log, route = m.log, m.route
	}
	log.Error("api: internal error", "route", route, "err", err)
	writeError(w, http.StatusInternalServerError, "internal", "internal error: the server logged the details")
}

// schemaError answers a failed read of the schema of a stream or queue: a
// corrupt schema in the registry is named (500 bad_schema), so an operator
// can find it; any other error is an internal one.
func schemaError(w http.ResponseWriter, err error) {
	if errors.Is(err, schema.ErrCorrupt) {
		writeError(w, http.StatusInternalServerError, "bad_schema", err.Error())
		return
	}
	internalError(w, err)
}
