package cmd

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/leatdev/leat/internal/rdb"
	"github.com/redis/go-redis/v9"
)

// processTicks runs a worker of ta until it processed n ticks sent through
// the CLI, then stops it: the registry then records stream "ticks" and
// processor "ticks/count".
func processTicks(t *testing.T, s shop, ta *ticksApp, n int) {
	t.Helper()
	b := start(t, ta.setup, s.quiet("worker")...)
	if r := run(t, ta.setup, ticks(n), s.args("sendmany", "ticks", "-")...); r.status != 0 {
		t.Fatalf("sendmany: %+v", r)
	}
	waitUntil(t, b, fmt.Sprintf("%d ticks processed", n), func() bool { return ta.tl.count() == n })
	if r := b.stop(t); r.status != 0 {
		t.Fatalf("worker: %+v", r)
	}
	s.waitStopped(t)
}

// waitStopped waits until processor ticks/count has no live member. A
// gracefully stopped executor leaves at once, but a heartbeat that runs
// while it drains can record it again, until its heartbeat expires (the
// lock expiry, 2s here).
func (s shop) waitStopped(t *testing.T) {
	t.Helper()
	s.waitProcessorStopped(t, "count")
}

// waitProcessorStopped waits until processor ticks/name has no live member
// (see waitStopped).
func (s shop) waitProcessorStopped(t *testing.T, name string) {
	t.Helper()
	waitUntil(t, nil, "no live member", func() bool {
		ctx := context.Background()
		now, err := s.client.Time(ctx).Result()
		if err != nil {
			t.Fatal(err)
		}
		n, err := s.client.ZCount(ctx, s.keys.Members("ticks", name), strconv.FormatInt(now.UnixMilli(), 10), "+inf").Result()
		if err != nil {
			t.Fatal(err)
		}
		return n == 0
	})
}

// group returns the XINFO GROUPS entry of group on partition p of ticks.
func (s shop) group(t *testing.T, p int, group string) redis.XInfoGroup {
	t.Helper()
	gs, err := s.client.XInfoGroups(context.Background(), s.keys.Partition("ticks", p)).Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range gs {
		if g.Name == group {
			return g
		}
	}
	t.Fatalf("partition %d has no group %q", p, group)
	return redis.XInfoGroup{}
}

// acked reports whether group has been delivered the last entry of every
// partition of ticks and has nothing pending.
func (s shop) acked(t *testing.T, group string) bool {
	t.Helper()
	for p := range 4 {
		if g := s.group(t, p, group); g.LastDeliveredID != s.lastID(t, p) || g.Pending != 0 {
			return false
		}
	}
	return true
}

// makePending reads up to n new entries of every partition of ticks into
// the pending list of group, as a worker that crashed would leave them, and
// returns how many it read.
func (s shop) makePending(t *testing.T, group string, n int64) int64 {
	t.Helper()
	var total int64
	for p := range 4 {
		res, err := s.client.XReadGroup(context.Background(), &redis.XReadGroupArgs{
			Group: group, Consumer: "crashed", Streams: []string{s.keys.Partition("ticks", p), ">"}, Count: n, Block: -1,
		}).Result()
		if err != nil && err != redis.Nil {
			t.Fatal(err)
		}
		for _, st := range res {
			total += int64(len(st.Messages))
		}
	}
	return total
}

// lastID returns the ID of the last entry of partition p of ticks, "0-0"
// when it is empty.
func (s shop) lastID(t *testing.T, p int) string {
	t.Helper()
	msgs, err := s.client.XRevRangeN(context.Background(), s.keys.Partition("ticks", p), "+", "-", 1).Result()
	if err != nil {
		t.Fatal(err)
	}
	if len(msgs) == 0 {
		return "0-0"
	}
	return msgs[0].ID
}

var partitionLine = regexp.MustCompile(`(?m)^partition ([0-9]+): reset to ([0-9]+-[0-9]+), ([0-9]+) pending dropped$`)

// checkReset checks the report of a reset to want (an ID, or "" for each
// partition's last entry) and the groups it left.
func checkReset(t *testing.T, s shop, r result, want string, dropped int64) {
	t.Helper()
	if r.status != 0 || r.stderr != "" {
		t.Fatalf("reset: %+v", r)
	}
	lines := partitionLine.FindAllStringSubmatch(r.stdout, -1)
	if len(lines) != 4 {
		t.Fatalf("stdout %q, want 4 partition lines", r.stdout)
	}
	var sum int64
	for p, m := range lines {
		id := want
		if id == "" {
			id = s.lastID(t, p)
		}
		if m[1] != strconv.Itoa(p) || m[2] != id {
			t.Errorf("line %q, want partition %d reset to %s", m[0], p, id)
		}
		n, _ := strconv.ParseInt(m[3], 10, 64)
		sum += n
		if g := s.group(t, p, "count"); g.LastDeliveredID != id || g.Pending != 0 {
			t.Errorf("partition %d: group %+v, want last delivered %s and nothing pending", p, g, id)
		}
	}
	if sum != dropped {
		t.Errorf("%d pending dropped, want %d", sum, dropped)
	}
	if sum := lastLine(r.stdout); !strings.HasPrefix(sum, "reset processor ticks/count on 4 partitions to ") ||
		!strings.Contains(sum, fmt.Sprintf(": %d pending ", dropped)) {
		t.Errorf("stdout %q, want a summary of %d dropped", r.stdout, dropped)
	}
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSuffix(s, "\n"), "\n")
	return lines[len(lines)-1]
}

func TestReset(t *testing.T) {
	t.Parallel()
	s := newShop(t)
	ta := &ticksApp{}
	processTicks(t, s, ta, 40)
	if r := run(t, nil, ticks(20), s.args("sendmany", "ticks", "-")...); r.status != 0 {
		t.Fatalf("sendmany: %+v", r)
	}
	pending := s.makePending(t, "count", 3)
	if pending == 0 {
		t.Fatal("no pending entries made")
	}

	// The standalone binary finds the processor and its stream in the registry.
	r := run(t, nil, "", s.args("reset", "--yes", "--start", "0", "ticks/count")...)
	checkReset(t, s, r, "0-0", pending)
	if !strings.HasSuffix(r.stdout, "reset processor ticks/count on 4 partitions to 0: "+strconv.FormatInt(pending, 10)+" pending entries dropped\n") {
		t.Errorf("summary %q", lastLine(r.stdout))
	}

	pending = s.makePending(t, "count", 2)
	r = run(t, nil, "", s.args("reset", "--yes", "--start", "latest", "count")...)
	checkReset(t, s, r, "", pending)

	r = run(t, nil, "", s.args("reset", "--yes", "--start", "$", "count")...)
	checkReset(t, s, r, "", 0)

	id := s.lastID(t, 0)
	r = run(t, nil, "", s.args("reset", "--yes", "--start", id, "count")...)
	checkReset(t, s, r, id, 0)

	// A worker started now processes every entry again.
	r = run(t, nil, "", s.args("reset", "--yes", "count")...)
	checkReset(t, s, r, "0-0", 0)
	again := &ticksApp{}
	b := start(t, again.setup, s.quiet("worker")...)
	waitUntil(t, b, "60 ticks processed again", func() bool { return again.tl.count() == 60 })
	if r := b.stop(t); r.status != 0 {
		t.Fatalf("worker: %+v", r)
	}
}

func TestResetConfirm(t *testing.T) {
	t.Parallel()
	s := newShop(t)
	ta := &ticksApp{}
	processTicks(t, s, ta, 10)
	before := s.group(t, 0, "count").LastDeliveredID

	for _, answer := range []string{"", "n\n", "nope\n"} {
		r := run(t, nil, answer, s.args("reset", "--start", "earliest", "ticks/count")...)
		wantFailure(t, r, exitUsage, "not confirmed: nothing changed", "--yes")
		if want := "reset processor ticks/count on the 4 partitions of stream ticks to earliest, dropping its in-flight deliveries? [y/N] "; !strings.HasPrefix(r.stdout, want) {
			t.Errorf("stdout %q, want the question %q", r.stdout, want)
		}
	}
	if got := s.group(t, 0, "count").LastDeliveredID; got != before {
		t.Errorf("unconfirmed reset moved partition 0 from %s to %s", before, got)
	}
	r := run(t, nil, "y\n", s.args("reset", "ticks/count")...)
	r.stdout = strings.TrimPrefix(r.stdout, r.stdout[:strings.Index(r.stdout, "[y/N] ")+len("[y/N] ")])
	checkReset(t, s, r, "0-0", 0)
}

// TestResetEmbedded resets a processor that never ran: the app's code knows
// it and its stream, the registry does not; the groups are created.
func TestResetEmbedded(t *testing.T) {
	t.Parallel()
	s := newShop(t)
	ta := &ticksApp{}
	r := run(t, ta.setup, "", s.args("reset", "--yes", "--start", "latest", "count")...)
	checkReset(t, s, r, "0-0", 0) // empty partitions: latest is 0-0

	r = run(t, nil, "", s.args("reset", "--yes", "count")...)
	wantFailure(t, r, exitUsage, `unknown processor "count": app "shop" has none`)
}

func TestResetRefusesWhileRunning(t *testing.T) {
	t.Parallel()
	s := newShop(t)
	ta := &ticksApp{}
	b := start(t, ta.setup, s.quiet("worker")...)
	a := ta.waitApp(t, b)
	waitUntil(t, b, "partitions owned", func() bool { return len(a.Executors()[0].Owned()) == 4 })
	r := run(t, nil, "", s.args("reset", "--yes", "ticks/count")...)
	wantFailure(t, r, exitFailure, "processor ticks/count is running in 1 executor: stop its workers first")
	if r := b.stop(t); r.status != 0 {
		t.Fatalf("worker: %+v", r)
	}
	// Stopped, it left: the reset goes ahead.
	s.waitStopped(t)
	r = run(t, nil, "", s.args("reset", "--yes", "ticks/count")...)
	checkReset(t, s, r, "0-0", 0)
}

func TestResetUsageErrors(t *testing.T) {
	t.Parallel()
	s := newShop(t)
	ta := &ticksApp{}
	processTicks(t, s, ta, 1)
	// A second stream with a processor of the same name.
	if err := s.client.HSet(context.Background(), s.keys.Processors(), "tocks/count", `{"stream":"tocks","processor":"count"}`).Err(); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		args []string
		want []string
	}{
		{"unknown processor", s.args("reset", "--yes", "nope"), []string{`unknown processor "nope" (known: ticks/count, tocks/count)`}},
		{"unknown full name", s.args("reset", "--yes", "ticks/nope"), []string{`unknown processor "ticks/nope" (known: ticks/count, tocks/count)`}},
		{"ambiguous", s.args("reset", "--yes", "count"), []string{`processor name "count" is ambiguous`, "ticks/count, tocks/count"}},
		{"stream not registered", s.args("reset", "--yes", "tocks/count"), []string{`its stream "tocks" is not in the registry`}},
		{"bad start", s.args("reset", "--yes", "--start", "yesterday", "ticks/count"), []string{`--start "yesterday": want earliest, latest, or an entry ID`}},
		{"bad ID", s.args("reset", "--yes", "--start", "12-x", "ticks/count"), []string{`--start "12-x"`}},
		{"no argument", s.args("reset", "--yes"), []string{"reset: want 1 argument, PROCESSOR, got 0"}},
		{"bad name", s.args("reset", "--yes", "ti:cks/count"), []string{`stream name "ti:cks" is invalid`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := run(t, nil, "", tc.args...)
			wantFailure(t, r, exitUsage, tc.want...)
		})
	}
}

// entriesRead returns group's entries-read counter on partition p of ticks,
// and whether Redis knows it.
func (s shop) entriesRead(t *testing.T, p int, group string) (int64, bool) {
	t.Helper()
	states, err := rdb.PartitionStates(context.Background(), s.client, []string{s.keys.Partition("ticks", p)})
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range states[0].Groups {
		if g.Name == group {
			return g.EntriesRead, g.EntriesReadOK
		}
	}
	t.Fatalf("partition %d has no group %q", p, group)
	return 0, false
}

// After a reset of a stream trimmed by retention, the group's entries-read
// counter counts the entries before its new position, trimmed ones
// included: the workers' trim check has nothing to report.
func TestResetSetsEntriesRead(t *testing.T) {
	t.Parallel()
	s := newShop(t)
	ta := &ticksApp{}
	processTicks(t, s, ta, 40)
	if r := run(t, nil, ticks(200), s.args("sendmany", "ticks", "-")...); r.status != 0 {
		t.Fatalf("sendmany: %+v", r)
	}
	ctx := context.Background()
	added := make([]int64, 4)
	for p := range 4 {
		key := s.keys.Partition("ticks", p)
		if err := s.client.XTrimMaxLen(ctx, key, 5).Err(); err != nil { // retention
			t.Fatal(err)
		}
		added[p] = s.client.XInfoStream(ctx, key).Val().EntriesAdded
	}

	r := run(t, nil, "", s.args("reset", "--yes", "--start", "latest", "count")...)
	checkReset(t, s, r, "", 0)
	for p := range 4 {
		if n, ok := s.entriesRead(t, p, "count"); !ok || n != added[p] {
			t.Errorf("partition %d after reset to latest: entries-read %d (known %v), want %d", p, n, ok, added[p])
		}
	}

	// To an ID: two entries of partition 0 follow it.
	msgs := s.client.XRevRangeN(ctx, s.keys.Partition("ticks", 0), "+", "-", 3).Val()
	id := msgs[2].ID
	r = run(t, nil, "", s.args("reset", "--yes", "--start", id, "count")...)
	checkReset(t, s, r, id, 0)
	if n, ok := s.entriesRead(t, 0, "count"); !ok || n != added[0]-2 {
		t.Errorf("after reset to %s: entries-read %d (known %v), want %d", id, n, ok, added[0]-2)
	}

	// Earliest: the trimmed entries count as read, the 5 kept ones not.
	r = run(t, nil, "", s.args("reset", "--yes", "--start", "earliest", "count")...)
	checkReset(t, s, r, "0-0", 0)
	if n, ok := s.entriesRead(t, 0, "count"); !ok || n != added[0]-5 {
		t.Errorf("after reset to earliest: entries-read %d (known %v), want %d", n, ok, added[0]-5)
	}
}
