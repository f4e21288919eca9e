package api

import (
	"net/http"

	"github.com/leatdev/leat/controlplane"
)

// workers answers the control plane's live workers and the revisions of
// its deployments (empty when no control plane serves the app).
func (h *handler) workers(w http.ResponseWriter, r *http.Request) {
	v, err := controlplane.Read(r.Context(), h.a.Client(), h.a.Config().KeyPrefix, h.a.Name())
	if err != nil {
		internalError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, v)
}
