package app_test

import (
	"context"
	"testing"
	"time"

	"github.com/leatdev/leat/app"
	"github.com/leatdev/leat/internal/tools/redistest"
	"github.com/leatdev/leat/stream"
	"github.com/vmihailenco/msgpack/v5"
)

// Entries in the layout written before the stream's entry codec existed
// (key, codec, data and h:NAME fields on every entry), added byte for byte as
// that layout was, are read by the fetch path beside entries of the current
// layout (no codec field), in order, with their keys, headers and codecs:
// a stream keeps its old entries across the layout change.
func TestReadsOldEntryLayout(t *testing.T) {
	t.Parallel()
	env := newEnv(t)
	a, s := env.newApp(1, nil)
	ctx := context.Background()
	key := app.PartitionKey(s, 0)
	old := func(codec string, data []byte, headers ...string) {
		vals := []any{"key", "k", "codec", codec, "data", data}
		for i := 0; i+1 < len(headers); i += 2 {
			vals = append(vals, "h:"+headers[i], headers[i+1])
		}
		if err := env.client.XAdd(ctx, redisXAdd{key, vals}.args()).Err(); err != nil {
			t.Fatal(err)
		}
	}
	mp := func(seq int) []byte {
		b, err := msgpack.Marshal(event{Key: "k", Seq: seq})
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	old("msgpack", mp(0), "traceparent", "00-abc-01")
	old("json", []byte(`{"key":"k","seq":1}`))
	old("msgpack", mp(2))
	if _, err := s.SendMessages(ctx, []stream.Message[event]{{Record: event{Key: "k", Seq: 3}, Headers: stream.Headers{"traceparent": "00-def-01"}}}); err != nil {
		t.Fatal(err)
	}
	sendEvents(t, s, []string{"k"}, 1, 4)
	fields, err := env.client.XRange(ctx, key, "-", "+").Result()
	if err != nil || len(fields) != 5 {
		t.Fatalf("partition holds %v, %v", fields, err)
	}
	if _, ok := fields[4].Values["codec"]; ok {
		t.Fatalf("new entry %v has a codec field", fields[4].Values)
	}

	r := newRecorder()
	if err := app.Process(a, s, "p", collect(r)); err != nil {
		t.Fatal(err)
	}
	w := startWorker(t, a)
	redistest.Eventually(t, 10*time.Second, "5 events processed", func() bool { return r.total() == 5 })
	if err := w.stop(t); err != nil {
		t.Fatal(err)
	}
	r.inOrder(t, false)
	wantTrace := map[int]string{0: "00-abc-01", 3: "00-def-01"}
	for _, e := range r.events {
		if string(e.Key) != "k" || e.Headers["traceparent"] != wantTrace[e.Record.Seq] {
			t.Errorf("event %d: key %q, headers %v", e.Record.Seq, e.Key, e.Headers)
		}
	}
}
