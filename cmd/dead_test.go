package cmd

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/leatdev/leat/inspect"
)

// deadTicks runs a worker whose processor dead-letters the ticks of key
// k3, sends 20 ticks (two of k3) and returns once both are dead letters
// and the worker stopped: with the dead letters replayed earlier, whose
// ticks fail again, want of them.
func deadTicks(t *testing.T, s shop, want int64) {
	t.Helper()
	ta := &ticksApp{fail: "k3"}
	w := start(t, ta.setup, s.quiet("worker", "--on-error", "dead-letter", "--retries", "0")...)
	if r := run(t, ta.setup, ticks(20), s.args("sendmany", "ticks", "-")...); r.status != 0 {
		t.Fatalf("sendmany: %+v", r)
	}
	dead := s.keys.DeadLetter("ticks", "count")
	waitUntil(t, w, "18 ticks counted, the k3 ticks dead-lettered", func() bool {
		return ta.tl.count() == 18 && s.client.XLen(context.Background(), dead).Val() == want
	})
	if r := w.stop(t); r.status != 0 {
		t.Fatalf("worker: %+v", r)
	}
	s.waitStopped(t)
}

func deadList(t *testing.T, s shop, args ...string) *inspect.DeadPage {
	t.Helper()
	r := run(t, nil, "", s.args(append([]string{"dead", "list", "--json"}, args...)...)...)
	if r.status != 0 || r.stderr != "" {
		t.Fatalf("dead list: %+v", r)
	}
	var page inspect.DeadPage
	if err := json.Unmarshal([]byte(r.stdout), &page); err != nil {
		t.Fatalf("dead list: %v in %q", err, r.stdout)
	}
	return &page
}

// The dead letters a processor's DeadLetter policy writes are counted by
// inspect, listed, shown decoded, replayed once into their partition and
// purged.
func TestDeadLetters(t *testing.T) {
	t.Parallel()
	s := newShop(t)
	deadTicks(t, s, 2)

	if n := inspectStream(t, s, "ticks").Processors[0].Dead; n != 2 {
		t.Errorf("inspect ticks: %d dead letters, want 2", n)
	}
	if n := inspectApp(t, s).Processors[0].Dead; n != 2 {
		t.Errorf("inspect: %d dead letters, want 2", n)
	}
	if r := run(t, nil, "", s.args("inspect", "ticks")...); !strings.Contains(r.stdout, "0 quarantined, 2 dead letters") {
		t.Errorf("inspect ticks: %+v", r)
	}
	if r := run(t, nil, "", s.args("inspect")...); !strings.Contains(r.stdout, "DEAD") {
		t.Errorf("inspect: %+v", r)
	}

	page := deadList(t, s, "ticks", "count")
	if page.Total != 2 || len(page.Letters) != 2 || page.Next != "" {
		t.Fatalf("listing %+v", page)
	}
	for _, d := range page.Letters {
		if d.Key != "k3" || !strings.Contains(d.Error, "cannot count k3") || d.Time == nil || d.Attempts == nil || !d.Replayable || d.Data != nil {
			t.Errorf("listed %+v", d)
		}
		found := false
		for _, e := range s.entries(t, "ticks", d.Partition) {
			found = found || (e.ID == d.EntryID && string(e.Key) == "k3")
		}
		if !found {
			t.Errorf("dead letter %s: entry %s of partition %d is not a k3 tick", d.ID, d.EntryID, d.Partition)
		}
	}
	first, second := page.Letters[0], page.Letters[1]
	if p := deadList(t, s, "--limit", "1", "ticks", "count"); len(p.Letters) != 1 || p.Letters[0].ID != first.ID || p.Next != first.ID {
		t.Errorf("first page %+v", p)
	} else if p := deadList(t, s, "--limit", "1", "--after", p.Next, "ticks", "count"); len(p.Letters) != 1 || p.Letters[0].ID != second.ID || p.Next != "" {
		t.Errorf("second page %+v", p)
	}
	if r := run(t, nil, "", s.args("dead", "list", "ticks", "count")...); r.status != 0 || !strings.Contains(r.stdout, first.ID) || !strings.Contains(r.stdout, "cannot count k3") {
		t.Errorf("table: %+v", r)
	}

	r := run(t, nil, "", s.args("dead", "show", "--json", "ticks", "count", first.ID)...)
	var shown inspect.DeadLetter
	if err := json.Unmarshal([]byte(r.stdout), &shown); r.status != 0 || err != nil {
		t.Fatalf("show: %+v, %v", r, err)
	}
	rec, _ := shown.Record.(map[string]any)
	if rec["key"] != "k3" || rec["n"] != float64(3) || shown.DecodeError != "" {
		t.Errorf("shown record %#v (%s)", shown.Record, shown.DecodeError)
	}
	if r := run(t, nil, "", s.args("dead", "show", "ticks", "count", first.ID)...); !strings.Contains(r.stdout, `"n":3`) {
		t.Errorf("show: %+v", r)
	}

	// Bad requests are refused, and change nothing.
	for _, args := range [][]string{
		{"dead", "list", "--limit", "0", "ticks", "count"},
		{"dead", "list", "--after", "nope", "ticks", "count"},
		{"dead", "list", "ticks"},
		{"dead", "show", "ticks", "count", "1-1"},
		{"dead", "show", "ticks", "count", "x"},
		{"dead", "replay", "ticks", "count"},
		{"dead", "replay", "--all", "ticks", "count", first.ID},
		{"dead", "replay", "ticks", "count", "x"},
		{"dead", "replay", "nostream", "count", first.ID},
		{"dead", "purge", "ticks", "count"},
		{"dead", "purge", "ticks", "bad:name", "--all"},
	} {
		if r := run(t, nil, "", s.args(args...)...); r.status != exitUsage || r.stderr == "" {
			t.Errorf("%v: %+v, want a usage error", args, r)
		}
	}
	if n := s.client.XLen(context.Background(), s.keys.DeadLetter("ticks", "count")).Val(); n != 2 {
		t.Fatalf("%d dead letters after refused requests", n)
	}

	// A replay adds the event back to its partition once.
	before := s.xlen(t, "ticks", first.Partition)
	if r := run(t, nil, "", s.args("dead", "replay", "ticks", "count", first.ID)...); r.status != 0 || r.stdout != "replayed 1 dead letter of ticks/count\n" {
		t.Fatalf("replay: %+v", r)
	}
	if r := run(t, nil, "", s.args("dead", "replay", "ticks", "count", first.ID)...); r.status != 1 || !strings.Contains(r.stderr, "no dead letter "+first.ID) {
		t.Errorf("second replay: %+v", r)
	}
	entries := s.entries(t, "ticks", first.Partition)
	if int64(len(entries)) != before+1 {
		t.Fatalf("partition %d: %d entries, want %d", first.Partition, len(entries), before+1)
	}
	last := entries[len(entries)-1]
	if string(last.Key) != "k3" {
		t.Errorf("replayed entry %+v", last)
	}
	if p := deadList(t, s, "ticks", "count"); p.Total != 1 || p.Letters[0].ID != second.ID {
		t.Errorf("after replay: %+v", p)
	}

	// --all replays what is there, in order; purge deletes.
	if r := run(t, nil, "", s.args("dead", "replay", "--all", "ticks", "count")...); r.status != 0 || r.stdout != "replayed 1 dead letter of ticks/count\n" {
		t.Fatalf("replay --all: %+v", r)
	}
	if r := run(t, nil, "", s.args("dead", "purge", "--all", "ticks", "count")...); r.status != 0 || r.stdout != "purged 0 dead letters of ticks/count\n" {
		t.Fatalf("purge --all: %+v", r)
	}
	// The two replayed ticks are processed, and fail again, beside the two
	// new ones.
	deadTicks(t, s, 4)
	p := deadList(t, s, "ticks", "count")
	if r := run(t, nil, "", s.args("dead", "purge", "ticks", "count", p.Letters[0].ID)...); r.status != 0 || r.stdout != "purged 1 dead letter of ticks/count\n" {
		t.Fatalf("purge: %+v", r)
	}
	if r := run(t, nil, "", s.args("dead", "purge", "--all", "ticks", "count")...); r.status != 0 || r.stdout != "purged 3 dead letters of ticks/count\n" {
		t.Fatalf("purge --all: %+v", r)
	}
	if n := s.client.XLen(context.Background(), s.keys.DeadLetter("ticks", "count")).Val(); n != 0 {
		t.Fatalf("%d dead letters after purge", n)
	}
}
