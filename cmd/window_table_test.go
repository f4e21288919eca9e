package cmd

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/leatdev/leat/app"
	"github.com/leatdev/leat/executor"
	"github.com/leatdev/leat/stream"
)

// windowsSetup counts ticks in tumbling windows of 10 "n" (seconds of event
// time) in the windowed table "per10" of processor "win".
func windowsSetup(cfg app.Config) (*app.App, error) {
	cfg.Processing = cfg.Processing.Merge(executor.Options{LockExpiry: 2 * time.Second, ReadBlock: 200 * time.Millisecond})
	a, err := app.New(cfg)
	if err != nil {
		return nil, err
	}
	s, err := stream.Declare[tick](a, "ticks", stream.KeyField("key"), stream.Partitions(4))
	if err != nil {
		return nil, err
	}
	w, err := stream.DeclareWindowed[int](s, "win", "per10", stream.Tumbling(10*time.Second),
		stream.EventTime(func(t tick) time.Time { return time.Unix(int64(t.N), 0) }))
	if err != nil {
		return nil, err
	}
	return a, app.Process(a, s, "win", func(ctx context.Context, events *stream.Events[tick]) error {
		ws := w.In(events)
		for e := range events.All() {
			if _, err := ws.Update(e, func(n int, _ bool) int { return n + 1 }); err != nil {
				return err
			}
		}
		return nil
	})
}

// leat table lists a windowed table's windows, without the app's code:
// each field (the window's start and key), its end, whether it closed and
// its value, and the partitions' event times.
func TestWindowTableCLI(t *testing.T) {
	t.Parallel()
	s := newShop(t)
	b := start(t, windowsSetup, s.quiet("worker")...)
	// ticks k0..k9, n 0..29: k1 gets n 1, 11, 21; windows [0,10), [10,20) close, [20,30) stays open
	if r := run(t, windowsSetup, ticks(30), s.args("sendmany", "ticks", "-")...); r.status != 0 {
		t.Fatalf("sendmany: %+v", r)
	}
	var all map[string]json.RawMessage
	waitUntil(t, b, "k1's last window", func() bool {
		r := run(t, nil, "", s.args("table", "--json", "--limit", "1000", "win", "per10")...)
		all = nil
		return r.status == 0 && json.Unmarshal([]byte(r.stdout), &all) == nil && all["w20000/k1"] != nil
	})
	if r := b.stop(t); r.status != 0 {
		t.Fatalf("worker: %+v", r)
	}
	var w struct {
		End    int64 `json:"end"`
		Closed bool  `json:"closed"`
		Value  int   `json:"value"`
	}
	if err := json.Unmarshal(all["w20000/k1"], &w); err != nil || w.End != 30000 || w.Closed || w.Value != 1 {
		t.Fatalf("window w20000/k1: %s (%v), want end 30000, open, 1", all["w20000/k1"], err)
	}
	if _, ok := all["w0/k1"]; ok {
		t.Fatalf("closed window w0/k1 kept past its retention: %s", all["w0/k1"])
	}
	// "t" is a partition's event time (the listing holds one of them):
	// the time of the last tick of its keys
	var clock int64
	if err := json.Unmarshal(all["t"], &clock); err != nil || clock < 20000 || clock > 29000 {
		t.Fatalf("event time %s (%v), want 20000 to 29000", all["t"], err)
	}
}
