package cmd

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/leatdev/leat/app"
	"github.com/leatdev/leat/executor"
	"github.com/leatdev/leat/inspect"
	"github.com/leatdev/leat/stream"
)

// inspectStream runs "inspect --json STREAM" and decodes its report.
func inspectStream(t *testing.T, s shop, name string) *inspect.StreamReport {
	t.Helper()
	r := run(t, nil, "", s.args("inspect", "--json", name)...)
	if r.status != 0 || r.stderr != "" {
		t.Fatalf("inspect %s: %+v", name, r)
	}
	var rep inspect.StreamReport
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		t.Fatalf("inspect %s: %v in %q", name, err, r.stdout)
	}
	return &rep
}

// pollStream is inspectStream for polling: nil while the stream is not
// registered yet.
func pollStream(t *testing.T, s shop, name string) *inspect.StreamReport {
	t.Helper()
	r := run(t, nil, "", s.args("inspect", "--json", name)...)
	if r.status == exitUsage && strings.Contains(r.stderr, "unknown stream") {
		return nil
	}
	if r.status != 0 {
		t.Fatalf("inspect %s: %+v", name, r)
	}
	var rep inspect.StreamReport
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		t.Fatalf("inspect %s: %v in %q", name, err, r.stdout)
	}
	return &rep
}

// inspectApp runs "inspect --json" and decodes the overview.
func inspectApp(t *testing.T, s shop) *inspect.Overview {
	t.Helper()
	r := run(t, nil, "", s.args("inspect", "--json")...)
	if r.status != 0 || r.stderr != "" {
		t.Fatalf("inspect: %+v", r)
	}
	var o inspect.Overview
	if err := json.Unmarshal([]byte(r.stdout), &o); err != nil {
		t.Fatalf("inspect: %v in %q", err, r.stdout)
	}
	return &o
}

// Lag, pending and lengths after partial processing are what Redis says.
func TestInspectLagAndPending(t *testing.T) {
	t.Parallel()
	s := newShop(t)
	ta := &ticksApp{}
	processTicks(t, s, ta, 40)
	if r := run(t, nil, ticks(20), s.args("sendmany", "ticks", "-")...); r.status != 0 {
		t.Fatalf("sendmany: %+v", r)
	}
	pending := s.makePending(t, "count", 2)

	rep := inspectStream(t, s, "ticks")
	if rep.Stream != "ticks" || len(rep.Partitions) != 4 || rep.Length != 60 || len(rep.Processors) != 1 {
		t.Fatalf("report %+v", rep)
	}
	pr := rep.Processors[0]
	if pr.Processor != "count" || pr.Pending != pending || pr.Lag == nil || *pr.Lag != 20-pending || pr.Owned != 0 || pr.Executors != 0 {
		t.Errorf("processor %+v, want pending %d and lag %d, no owner", pr, pending, 20-pending)
	}
	for p, part := range rep.Partitions {
		if part.Length != s.xlen(t, "ticks", p) || part.LastID != s.lastID(t, p) || part.FirstID == "" {
			t.Errorf("partition %+v: length %d, last %s in Redis", part, s.xlen(t, "ticks", p), s.lastID(t, p))
		}
		g := s.group(t, p, "count")
		pp := pr.Partitions[p]
		if pp.Lag == nil || *pp.Lag != g.Lag || pp.Pending != g.Pending || pp.LastDeliveredID != g.LastDeliveredID || pp.Owner != nil {
			t.Errorf("partition %d: %+v, Redis says %+v", p, pp, g)
		}
		if (pp.Pending > 0) != (pp.OldestPendingAgeMS != nil && pp.OldestPendingID != "") || pp.Consumers != g.Consumers {
			t.Errorf("partition %d: oldest pending %v %q with %d pending, consumers %d", p, pp.OldestPendingAgeMS, pp.OldestPendingID, pp.Pending, pp.Consumers)
		}
		if pp.RetentionRisk || pp.Quarantine != nil {
			t.Errorf("partition %d: %+v", p, pp)
		}
	}

	// The table shows the same, in aligned columns.
	r := run(t, nil, "", s.args("inspect", "ticks")...)
	if r.status != 0 || r.stderr != "" {
		t.Fatalf("inspect: %+v", r)
	}
	for _, want := range []string{
		"stream ticks of app shop at ", ": 4 partitions, size 50000, codec msgpack, key key, 60 entries",
		fmt.Sprintf("processor count: 0 live executors, 0/4 partitions owned, lag %d, pending %d, 0 quarantined", 20-pending, pending),
	} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("table %q lacks %q", r.stdout, want)
		}
	}
	checkAligned(t, r.stdout, "PARTITION  WORKER")
	checkAligned(t, r.stdout, "PARTITION  LENGTH")

	o := inspectApp(t, s)
	if len(o.Streams) != 1 || o.Streams[0].Length != 60 || len(o.Processors) != 1 ||
		o.Processors[0].Pending != pending || *o.Processors[0].Lag != 20-pending {
		t.Errorf("overview %+v", o)
	}
}

// checkAligned checks that the table whose header starts with header has
// its columns aligned: each row's cells start where the header's do.
func checkAligned(t *testing.T, out, header string) {
	t.Helper()
	lines := strings.Split(out, "\n")
	for i, l := range lines {
		if !strings.HasPrefix(l, header) {
			continue
		}
		starts := columnStarts(l)
		for _, row := range lines[i+1:] {
			if row == "" {
				return
			}
			for _, st := range starts[1:] {
				if st >= len(row) || row[st-1] != ' ' || row[st] == ' ' {
					t.Errorf("row %q not aligned with header %q", row, l)
					break
				}
			}
		}
		return
	}
	t.Errorf("no table with header %q in %q", header, out)
}

var column = regexp.MustCompile(`\S+( \S+)*`)

func columnStarts(header string) []int {
	var out []int
	for _, m := range column.FindAllStringIndex(header, -1) {
		out = append(out, m[0])
	}
	return out
}

// Owners follow a rebalance between two workers, and a quarantined
// partition is reported with its reason.
func TestInspectOwnersAndQuarantine(t *testing.T) {
	t.Parallel()
	s := newShop(t)
	ta := &ticksApp{fail: "k3"}
	w1 := start(t, ta.setup, s.quiet("worker", "--worker-id", "w1", "--on-error", "quarantine")...)
	waitUntil(t, w1, "w1 owns every partition", func() bool {
		return ownedBy(pollStream(t, s, "ticks"))["w1"] == 4
	})
	if r := run(t, nil, ticks(20), s.args("sendmany", "ticks", "-")...); r.status != 0 {
		t.Fatalf("sendmany: %+v", r)
	}
	var bad int
	waitUntil(t, w1, "a quarantined partition", func() bool {
		rep := inspectStream(t, s, "ticks")
		for _, pp := range rep.Processors[0].Partitions {
			if pp.Quarantine != nil {
				bad = pp.Partition
				return true
			}
		}
		return false
	})
	rep := inspectStream(t, s, "ticks")
	q := rep.Processors[0].Partitions[bad].Quarantine
	if q.Policy != "quarantine" || !strings.Contains(q.Error, "cannot count k3") || q.Worker != "w1" || rep.Processors[0].Quarantined != 1 {
		t.Errorf("quarantine %+v", q)
	}
	if len(rep.Warnings) != 1 || !strings.Contains(rep.Warnings[0], "stopped by the quarantine policy") {
		t.Errorf("warnings %q", rep.Warnings)
	}
	if r := run(t, nil, "", s.args("inspect", "ticks")...); !strings.Contains(r.stdout, "quarantine: ") ||
		!strings.Contains(r.stdout, "cannot count k3") || !strings.Contains(r.stdout, "warning: processor count: partition ") {
		t.Errorf("table %q lacks the quarantine", r.stdout)
	}

	ta2 := &ticksApp{fail: "k3"}
	w2 := start(t, ta2.setup, s.quiet("worker", "--worker-id", "w2", "--on-error", "quarantine")...)
	waitUntil(t, w2, "two partitions each", func() bool {
		o := ownedBy(inspectStream(t, s, "ticks"))
		return o["w1"] == 2 && o["w2"] == 2
	})
	o := inspectApp(t, s)
	if o.Leader == nil || (o.Leader.Worker != "w1" && o.Leader.Worker != "w2") || o.Leader.Term < 1 {
		t.Errorf("leader %+v", o.Leader)
	}
	held := map[string]int{}
	for _, w := range o.Workers {
		if w.Leader != (o.Leader != nil && w.ID == o.Leader.Worker) {
			t.Errorf("worker %+v: leader flag", w)
		}
		for _, e := range w.Executors {
			if !e.Alive || e.HeartbeatAgeMS > 2000 || e.Stream != "ticks" || e.Processor != "count" {
				t.Errorf("executor %+v of %s", e, w.ID)
			}
			held[w.ID] += len(e.Partitions)
		}
	}
	if held["w1"] != 2 || held["w2"] != 2 || len(o.Processors) != 1 || o.Processors[0].Executors != 2 || o.Processors[0].Owned != 4 {
		t.Errorf("overview %+v: held %v", o, held)
	}
	r := run(t, nil, "", s.args("inspect")...)
	for _, want := range []string{"app shop at ", "leader: worker w", "ticks/count  2          4/4"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("overview table %q lacks %q", r.stdout, want)
		}
	}
	checkAligned(t, r.stdout, "WORKER  LEADER")
	checkAligned(t, r.stdout, "STREAM  PARTITIONS")
}

// ownedBy counts the partitions of the first processor per owning worker.
func ownedBy(rep *inspect.StreamReport) map[string]int {
	out := map[string]int{}
	if rep == nil || len(rep.Processors) == 0 {
		return out
	}
	for _, pp := range rep.Processors[0].Partitions {
		if pp.Owner != nil {
			out[pp.Owner.Worker]++
		}
	}
	return out
}

// A lag near the retention size is flagged before trimming can drop it.
func TestInspectRetentionRisk(t *testing.T) {
	t.Parallel()
	s := newShop(t)
	setup := func(cfg app.Config) (*app.App, error) {
		cfg.Processing = cfg.Processing.Merge(executor.Options{LockExpiry: 2 * time.Second, ReadBlock: 200 * time.Millisecond})
		a, err := app.New(cfg)
		if err != nil {
			return nil, err
		}
		st, err := stream.Declare[tick](a, "tiny", stream.KeyField("key"), stream.Partitions(1), stream.Size(10))
		if err == nil {
			err = app.Process(a, st, "slow", func(ctx context.Context, events *stream.Events[tick]) error {
				for range events.All() {
				}
				return nil
			})
		}
		return a, err
	}
	// A worker records the processor and creates its group, then stops.
	b := start(t, setup, s.quiet("worker")...)
	waitUntil(t, b, "the partition owned", func() bool {
		rep := pollStream(t, s, "tiny")
		return rep != nil && len(rep.Processors) == 1 && rep.Processors[0].Owned == 1
	})
	if r := b.stop(t); r.status != 0 {
		t.Fatalf("worker: %+v", r)
	}
	if r := run(t, nil, ticks(7), s.args("sendmany", "tiny", "-")...); r.status != 0 {
		t.Fatalf("sendmany: %+v", r)
	}
	if rep := inspectStream(t, s, "tiny"); rep.Processors[0].Partitions[0].RetentionRisk || len(rep.Warnings) != 0 {
		t.Errorf("lag 7 of 10 flagged: %+v", rep)
	}
	if r := run(t, nil, ticks(1), s.args("sendmany", "tiny", "-")...); r.status != 0 {
		t.Fatalf("sendmany: %+v", r)
	}
	rep := inspectStream(t, s, "tiny")
	pp := rep.Processors[0].Partitions[0]
	if !pp.RetentionRisk || pp.Lag == nil || *pp.Lag != 8 || len(rep.Warnings) != 1 ||
		!strings.Contains(rep.Warnings[0], "lags 8 entries on partition 0 of tiny, 80% of its retention size 10") {
		t.Errorf("lag 8 of 10: %+v, warnings %q", pp, rep.Warnings)
	}
	if r := run(t, nil, "", s.args("inspect", "tiny")...); !strings.Contains(r.stdout, "RETENTION RISK") || !strings.Contains(r.stdout, "warning: processor slow lags 8") {
		t.Errorf("table %q", r.stdout)
	}
}

func TestInspectErrors(t *testing.T) {
	t.Parallel()
	s := newShop(t)
	wantFailure(t, run(t, nil, "", s.args("inspect", "nope")...), exitUsage, `unknown stream "nope"`, `app "shop" has no stream`)
	// An app without a registry (a misspelt --app) is named, with the apps
	// that have one, rather than shown as an empty overview.
	wantFailure(t, run(t, nil, "", s.args("inspect")...), exitUsage, `app "shop" has no registry`, "no app has one under this prefix")
	if r := run(t, nil, `{"key":"a","n":1}`+"\n", s.args("send", "--key", "key", "orders", `{"key":"a","n":1}`)...); r.status != 0 {
		t.Fatalf("send: %+v", r)
	}
	other := append(append([]string{}, s.global[:len(s.global)-2]...), "--app", "nosuchapp", "inspect")
	wantFailure(t, run(t, nil, "", other...), exitUsage, `app "nosuchapp" has no registry under prefix`, "apps with one: shop)")
	wantFailure(t, run(t, nil, "", append(other, "--json")...), exitUsage, `app "nosuchapp" has no registry`)
	wantFailure(t, run(t, nil, "", s.args("inspect", "nope")...), exitUsage, `unknown stream "nope": app "shop" has orders`)
	wantFailure(t, run(t, nil, "", s.args("inspect", "a:b")...), exitUsage, "stream name")
	wantFailure(t, run(t, nil, "", s.args("inspect", "a", "b")...), exitUsage, `inspect: want STREAM or queue QUEUE, got "a" "b"`)
	wantFailure(t, run(t, nil, "", s.args("inspect", "a", "b", "c")...), exitUsage, "inspect: want at most STREAM or queue QUEUE, got 3 arguments")
	wantFailure(t, run(t, nil, "", s.args("inspect", "queue", "a:b")...), exitUsage, "task queue name")
	wantFailure(t, run(t, nil, "", s.args("inspect", "queue", "mail")...), exitUsage, `unknown task queue "mail": app "shop" has no task queue`)
	// A stream without processors, and an app without workers.
	rep := inspectStream(t, s, "orders")
	if rep.Length != 1 || len(rep.Processors) != 0 {
		t.Errorf("report %+v", rep)
	}
	o := inspectApp(t, s)
	if o.Leader != nil || len(o.Workers) != 0 || len(o.Streams) != 1 {
		t.Errorf("overview %+v", o)
	}
	if r := run(t, nil, "", s.args("inspect")...); !strings.Contains(r.stdout, "leader: none") {
		t.Errorf("overview table %q", r.stdout)
	}
}
