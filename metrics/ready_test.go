package metrics

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestAllReady: /readyz is ready only when every check is.
func TestAllReady(t *testing.T) {
	x, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	var child error = errors.New("no handler process ready yet")
	ok := func(context.Context) error { return nil }
	h := NewHandler(x, AllReady(ok, nil, func(context.Context) error { return child }))
	get := func() (int, string) {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/readyz", nil))
		return rec.Code, rec.Body.String()
	}
	if code, body := get(); code != http.StatusServiceUnavailable || !strings.Contains(body, "no handler process ready") {
		t.Fatalf("%d %q", code, body)
	}
	child = nil
	if code, body := get(); code != http.StatusOK || body != "ready\n" {
		t.Fatalf("%d %q", code, body)
	}
}
