package api_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/leatdev/leat/app"
	"github.com/leatdev/leat/internal/tools/redistest"
	"github.com/leatdev/leat/stream"
)

// A processor's table read over HTTP: values as JSON, null for a key
// without one; bad names, keys, unknown streams and tables refused.
func TestTableValues(t *testing.T) {
	t.Parallel()
	c, prefix := redistest.Client(t)
	e := newEnvOn(t, c, prefix)

	w := newApp(t, c, prefix)
	orders, err := stream.Declare[order](w, "orders", stream.KeyField("id"))
	if err != nil {
		t.Fatal(err)
	}
	totals, err := stream.DeclareTable[int](orders, "totals", "amounts")
	if err != nil {
		t.Fatal(err)
	}
	err = app.Process(w, orders, "totals", func(ctx context.Context, events *stream.Events[order]) error {
		st := totals.In(events)
		for ev := range events.All() {
			n, _, err := st.Get(ctx, ev.Record.ID)
			if err != nil {
				return err
			}
			if err := st.Set(ev.Record.ID, n+ev.Record.Amount); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = w.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })

	e.do(t, "POST", "/v1/streams/orders/events", `[{"id":"o1","amount":5},{"id":"o2","amount":7},{"id":"o1","amount":10}]`).want(t, http.StatusOK, "")
	// o1 and o2 may fall in different partitions, processed apart: both are waited for.
	redistest.Eventually(t, 20*time.Second, "the orders summed", func() bool {
		n1, _, err1 := totals.Get(context.Background(), "o1")
		n2, _, err2 := totals.Get(context.Background(), "o2")
		return err1 == nil && err2 == nil && n1 == 15 && n2 == 7
	})
	r := e.do(t, "GET", "/v1/streams/orders/processors/totals/tables/amounts?key=o1&key=o2&key=o9", "").want(t, http.StatusOK, "")
	values, _ := r.body["values"].(map[string]any)
	if len(values) != 3 || values["o1"] != float64(15) || values["o2"] != float64(7) || values["o9"] != nil {
		t.Fatalf("values: %s", r.raw)
	}
	for _, c := range []struct {
		path   string
		status int
		code   string
	}{
		{"/v1/streams/orders/processors/totals/tables/amounts", http.StatusBadRequest, "bad_keys"},
		{"/v1/streams/orders/processors/totals/tables/a%20b?key=o1", http.StatusBadRequest, "bad_name"},
		{"/v1/streams/nope/processors/totals/tables/amounts?key=o1", http.StatusNotFound, "unknown_stream"},
		{"/v1/streams/orders/processors/nope/tables/amounts?key=o1", http.StatusNotFound, "unknown_table"},
		{"/v1/streams/orders/processors/totals/tables/nope?key=o1", http.StatusNotFound, "unknown_table"},
	} {
		e.do(t, "GET", c.path, "").want(t, c.status, c.code)
	}
}
