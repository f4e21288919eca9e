package api_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/leatdev/leat/api"
	"github.com/leatdev/leat/internal/tools/redistest"
)

// A page that reads the API once, right after a burst, gets the burst's
// rate from the server: the entries appended per 5 s of the last minute,
// counted from their IDs, and the tasks finished per 10 s, from the
// counters the task scripts keep; not from its own polls.
func TestRatesFromTheServer(t *testing.T) {
	t.Parallel()
	e := newEnv(t, api.Options{})
	const n = 6000
	for range 2 {
		var b strings.Builder
		b.WriteString("[")
		for i := range n / 2 {
			if i > 0 {
				b.WriteString(",")
			}
			fmt.Fprintf(&b, `{"id":"o%d","amount":%d}`, i, i)
		}
		b.WriteString("]")
		e.do(t, "POST", "/v1/streams/orders/events", b.String()).want(t, 200, "")
	}
	r := e.do(t, "GET", "/v1/streams/orders", "").want(t, 200, "")
	ap, _ := r.body["appended"].(map[string]any)
	counts, _ := ap["counts"].([]any)
	if len(counts) != 12 || ap["bucket_ms"] != float64(5000) {
		t.Fatalf("appended %v, want 12 buckets of 5 s", ap)
	}
	var sum float64
	for _, c := range counts {
		sum += c.(float64) // every bucket known: fewer entries than are read
	}
	if sum != n {
		t.Fatalf("appended counts %v sum to %v, want the %d sent", counts, sum, n)
	}
	last10 := counts[10].(float64) + counts[11].(float64)
	if ps := ap["per_second"].(float64); ps <= 0 || ps != last10/10 {
		t.Fatalf("per_second %v, want the last 10 s's %v entries over 10 s", ps, last10)
	}

	// Tasks finished: the queue's row carries its counters' last minute.
	const tasks = 12
	for i := range tasks {
		e.do(t, "POST", "/v1/queues/work/tasks", fmt.Sprintf(`{"payload":{"do":"t%d"}}`, i)).want(t, 200, "")
	}
	redistest.Eventually(t, 20*time.Second, "the tasks finished", func() bool {
		qs, _ := e.do(t, "GET", "/v1/queues", "").body["queues"].([]any)
		q, _ := qs[0].(map[string]any)
		c, _ := q["counts"].(map[string]any)
		return c["succeeded"] == float64(tasks)
	})
	qs, _ := e.do(t, "GET", "/v1/queues", "").want(t, 200, "").body["queues"].([]any)
	fin, _ := qs[0].(map[string]any)["finished"].(map[string]any)
	fc, _ := fin["counts"].([]any)
	var done float64
	for _, c := range fc {
		done += c.(float64)
	}
	if len(fc) != 6 || done != tasks || fin["per_second"].(float64) <= 0 {
		t.Fatalf("finished %v, want the %d tasks in 6 buckets and a rate", fin, tasks)
	}
}
