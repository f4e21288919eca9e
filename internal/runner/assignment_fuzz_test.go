package runner

import (
	"context"
	"encoding/json"
	"errors"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/leatdev/leat/executor"
	"github.com/leatdev/leat/internal/core"
	"github.com/leatdev/leat/internal/tools/redistest"
	"github.com/leatdev/leat/rebalance"
)

// FuzzParseAssignment checks the reader of the assignment key: what a
// rebalance stores reads back the same, and an assignment accepted gives
// every partition in range to at most one member, so an executor never
// runs a partition that does not exist or one another executor runs.
func FuzzParseAssignment(f *testing.F) {
	for _, members := range [][]string{{"a"}, {"a", "b", "c"}, nil} {
		b, err := json.Marshal(assignment{Version: 7, Members: rebalance.Assign(8, members, nil), Time: time.Unix(1763800000, 0).UTC()})
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b, uint8(8))
	}
	f.Add([]byte(`{"version":3,"members":{"ghost":[0,0,9]}}`), uint8(4))
	f.Add([]byte(`{"version":3,"members":{"a":[-1]}}`), uint8(4))
	f.Add([]byte(`{"version":1.5,"members":{}}`), uint8(4))
	f.Add([]byte(`{"members":{"a":[0],"b":[0]}}`), uint8(1))
	f.Fuzz(func(t *testing.T, b []byte, partitions uint8) {
		n := int(partitions)
		a, err := parseAssignment(b, n)
		if errors.Is(err, errBadAssignment) {
			if a.Members != nil {
				t.Fatalf("a refused assignment keeps members %v", a.Members)
			}
			return
		}
		if err != nil {
			return
		}
		owner := map[int]string{}
		for m, ps := range a.Members {
			for _, p := range ps {
				if p < 0 || p >= n {
					t.Fatalf("accepted %q: %q has partition %d of %d", b, m, p, n)
				}
				if o, dup := owner[p]; dup {
					t.Fatalf("accepted %q: partition %d owned by %q and %q", b, p, o, m)
				}
				owner[p] = m
			}
		}
		// What a rebalance computes from it and stores reads back the same.
		next := assignment{Version: a.Version + 1, Members: rebalance.Assign(n, slices.Sorted(maps.Keys(a.Members)), a.Members), Time: a.Time}
		out, err := json.Marshal(next)
		if err != nil {
			return // a time outside JSON's years: never stored (Now is)
		}
		back, err := parseAssignment(out, n)
		if err != nil || back.Version != next.Version || !equalAssignments(back.Members, next.Members) {
			t.Fatalf("round trip of %s: %+v, %v", out, back, err)
		}
	})
}

// FuzzControlNotice checks the reader of control notices: every notice an
// executor announces is read as it was meant (an assignment wakes all, a
// membership change wakes the others), and any other field map wakes no
// one or is a notice of a known type, never a panic.
func FuzzControlNotice(f *testing.F) {
	f.Add("assigned", "e1", int64(4), "e1")
	f.Add("join", "e1", int64(0), "e2")
	f.Add("leave", "e1", int64(0), "e1")
	f.Add("compact", "e1", int64(0), "e2")
	f.Fuzz(func(t *testing.T, kind, from string, version int64, self string) {
		fields := noticeFields(kind, from, version)
		values := map[string]any{}
		for i := 0; i+1 < len(fields); i += 2 {
			values[fields[i].(string)] = fields[i+1]
		}
		want := kind == noticeAssigned || ((kind == noticeJoin || kind == noticeLeave || kind == noticeDead) && from != self)
		if got := wakes(self, values); got != want {
			t.Fatalf("notice %v read by %q wakes %v, want %v", values, self, got, want)
		}
		// Values of other types than Redis sends, or missing.
		values["type"] = []byte(kind)
		if wakes(self, values) {
			t.Fatalf("a non-string type woke %q", self)
		}
		delete(values, "type")
		values["executor"] = version
		if wakes(self, values) {
			t.Fatalf("a notice without a type woke %q", self)
		}
	})
}

// An assignment no rebalance stores (a partition out of range, one listed
// twice) is not applied: it is replaced by a proper one, and the executor
// runs the partitions that exist.
func TestInvalidAssignmentIsReplaced(t *testing.T) {
	t.Parallel()
	r := newRig(t, 4, 100)
	e := r.executor("p", executor.Options{}, func(ctx context.Context, _ core.Feed) error { <-ctx.Done(); return nil })
	key := e.group.AssignmentKey()
	bad := `{"version":3,"members":{"` + e.id + `":[0,0,9]}}`
	if err := r.client.Set(context.Background(), key, bad, 0).Err(); err != nil {
		t.Fatal(err)
	}
	r.run(e)
	owns(t, e, 0, 1, 2, 3)
	b, err := r.client.Get(context.Background(), key).Bytes()
	if err != nil {
		t.Fatal(err)
	}
	a, err := parseAssignment(b, 4)
	if err != nil || a.Version != 4 || len(a.Members[e.id]) != 4 {
		t.Fatalf("stored %s: %+v, %v", b, a, err)
	}
	redistest.Eventually(t, 5*time.Second, "settled", func() bool {
		ok, err := e.Settled(context.Background())
		return err == nil && ok
	})
}
