package cmd

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/leatdev/leat/app"
	"github.com/leatdev/leat/executor"
	"github.com/leatdev/leat/stream"
)

// sums is what the tables of tablesApp hold per key.
type sums struct {
	Count int `msgpack:"count" json:"count"`
	Last  int `msgpack:"last" json:"last"`
}

// tablesApp processes ticks into two tables of processor "sum": "sums"
// (msgpack) and "lasts" (JSON).
type tablesApp struct{}

func (ta *tablesApp) setup(cfg app.Config) (*app.App, error) {
	cfg.Processing = cfg.Processing.Merge(executor.Options{LockExpiry: 2 * time.Second, ReadBlock: 200 * time.Millisecond})
	a, err := app.New(cfg)
	if err != nil {
		return nil, err
	}
	s, err := stream.Declare[tick](a, "ticks", stream.KeyField("key"), stream.Partitions(4))
	if err != nil {
		return nil, err
	}
	sumsTable, err := stream.DeclareTable[sums](s, "sum", "sums")
	if err != nil {
		return nil, err
	}
	lasts, err := stream.DeclareTable[int](s, "sum", "lasts", stream.TableCodec(stream.JSON))
	if err != nil {
		return nil, err
	}
	return a, app.Process(a, s, "sum", func(ctx context.Context, events *stream.Events[tick]) error {
		st, lt := sumsTable.In(events), lasts.In(events)
		for e := range events.All() {
			v, _, err := st.Get(ctx, e.Record.Key)
			if err != nil {
				return err
			}
			if err := st.Set(e.Record.Key, sums{Count: v.Count + 1, Last: e.Record.N}); err != nil {
				return err
			}
			if err := lt.Set(e.Record.Key, e.Record.N); err != nil {
				return err
			}
		}
		return nil
	})
}

// sumsTable returns table "sums" of tablesApp, read through an app of the
// test's own (every command of the CLI runs the setup on an app of its own,
// closed when the command ends).
func (s shop) sumsTable(t *testing.T) *stream.Table[sums] {
	t.Helper()
	ra, err := app.New(app.Config{Name: "shop", Client: s.client, KeyPrefix: s.keys.Prefix})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ra.Close() })
	rs, err := stream.Declare[tick](ra, "ticks", stream.KeyField("key"), stream.Partitions(4))
	if err != nil {
		t.Fatal(err)
	}
	table, err := stream.DeclareTable[sums](rs, "sum", "sums")
	if err != nil {
		t.Fatal(err)
	}
	return table
}

// leat table reads a processor's tables without the app's code: the codec
// from the registry, each key from its partition, values printed as JSON.
func TestTableCLI(t *testing.T) {
	t.Parallel()
	s := newShop(t)
	ta := &tablesApp{}
	b := start(t, ta.setup, s.quiet("worker")...)
	if r := run(t, ta.setup, ticks(30), s.args("sendmany", "ticks", "-")...); r.status != 0 {
		t.Fatalf("sendmany: %+v", r)
	}
	sumsTable := s.sumsTable(t)
	// every key's three ticks, not only the last key's: the partitions
	// are processed independently
	waitUntil(t, b, "30 ticks summed", func() bool {
		for k := range 10 {
			v, _, err := sumsTable.Get(context.Background(), fmt.Sprintf("k%d", k))
			if err != nil || v.Count != 3 {
				return false
			}
		}
		return true
	})
	if r := b.stop(t); r.status != 0 {
		t.Fatalf("worker: %+v", r)
	}

	// The standalone binary (no setup): ticks k0..k9, n 0..29.
	r := run(t, nil, "", s.args("table", "--json", "sum", "sums", "k1", "k9", "nobody")...)
	if r.status != 0 {
		t.Fatalf("table --json: %+v", r)
	}
	var got map[string]*sums
	if err := json.Unmarshal([]byte(r.stdout), &got); err != nil {
		t.Fatalf("table --json printed %q: %v", r.stdout, err)
	}
	if len(got) != 3 || got["k1"] == nil || *got["k1"] != (sums{3, 21}) || got["k9"] == nil || *got["k9"] != (sums{3, 29}) || got["nobody"] != nil {
		t.Fatalf("table --json: %s", r.stdout)
	}
	r = run(t, nil, "", s.args("table", "ticks/sum", "lasts", "k2", "nobody")...)
	if r.status != 0 || !strings.Contains(r.stdout, "k2      22") || !strings.Contains(r.stdout, "nobody  null") {
		t.Fatalf("table: %+v", r)
	}

	// Without keys: the table's keys, up to --limit.
	r = run(t, nil, "", s.args("table", "--json", "sum", "lasts")...)
	var all map[string]int
	if err := json.Unmarshal([]byte(r.stdout), &all); r.status != 0 || err != nil || len(all) != 10 || all["k3"] != 23 || r.stderr != "" {
		t.Fatalf("table --json sum lasts (%v): %+v", err, r)
	}
	r = run(t, nil, "", s.args("table", "--limit", "3", "sum", "lasts")...)
	if r.status != 0 || strings.Count(r.stdout, "\n") != 4 || !strings.Contains(r.stderr, "the first 3 keys; the table holds more") {
		t.Fatalf("table --limit 3: %+v", r)
	}

	// inspect names the processor's tables.
	r = run(t, nil, "", s.args("inspect", "ticks")...)
	if r.status != 0 || !strings.Contains(r.stdout, "0 quarantined, 0 dead letters; tables lasts (json), sums (msgpack)") {
		t.Fatalf("inspect ticks: %+v", r)
	}
	r = run(t, nil, "", s.args("inspect", "--json", "ticks")...)
	var rep struct {
		Processors []struct {
			Tables []struct{ Name, Codec string } `json:"tables"`
		} `json:"processors"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil || len(rep.Processors) != 1 || len(rep.Processors[0].Tables) != 2 ||
		rep.Processors[0].Tables[1].Name != "sums" || rep.Processors[0].Tables[1].Codec != "msgpack" {
		t.Fatalf("inspect --json ticks (%v): %s", err, r.stdout)
	}

	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"table", "sum"}, "want at least 2 arguments"},
		{[]string{"table", "--limit", "0", "sum", "sums"}, "--limit 0"},
		{[]string{"table", "sum", "totals", "k1"}, `processor ticks/sum has no table "totals" (it has lasts, sums;`},
		{[]string{"table", "nope", "sums", "k1"}, "nope"},
	} {
		r := run(t, nil, "", s.args(c.args...)...)
		if r.status != exitUsage || !strings.Contains(r.stderr, c.want) {
			t.Errorf("%v: status %d, stderr %q; want %d saying %q", c.args, r.status, r.stderr, exitUsage, c.want)
		}
	}
}

// leat reset of a processor that keeps tables asks what to do with them:
// keep leaves their values (a replay counts the events a second time),
// clear deletes them on every partition (a replay counts them once).
func TestResetTables(t *testing.T) {
	t.Parallel()
	s := newShop(t)
	ta := &tablesApp{}
	sumsTable := s.sumsTable(t)
	count := func() int {
		v, _, err := sumsTable.Get(context.Background(), "k9")
		if err != nil {
			t.Fatal(err)
		}
		return v.Count
	}
	// process runs a worker until k9 counts want and every entry of ticks
	// is acknowledged (k9's partition may be done before the others), then
	// stops it.
	process := func(want int) {
		t.Helper()
		b := start(t, ta.setup, s.quiet("worker")...)
		waitUntil(t, b, fmt.Sprintf("k9 counted %d times", want), func() bool { return count() == want })
		waitUntil(t, b, "every entry acknowledged", func() bool { return s.acked(t, "sum") })
		if r := b.stop(t); r.status != 0 {
			t.Fatalf("worker: %+v", r)
		}
		s.waitProcessorStopped(t, "sum")
	}
	if r := run(t, ta.setup, ticks(30), s.args("sendmany", "ticks", "-")...); r.status != 0 {
		t.Fatalf("sendmany: %+v", r)
	}
	process(3)

	r := run(t, ta.setup, "", s.args("reset", "--yes", "sum")...)
	if r.status != 2 || !strings.Contains(r.stderr, "keeps tables lasts, sums: pass --tables clear") {
		t.Fatalf("reset without --tables: %+v", r)
	}
	r = run(t, ta.setup, "", s.args("reset", "--yes", "--tables", "drop", "sum")...)
	if r.status != 2 || !strings.Contains(r.stderr, `--tables "drop": want clear or keep`) {
		t.Fatalf("reset --tables drop: %+v", r)
	}
	if count() != 3 {
		t.Fatalf("a refused reset changed the table: k9 counted %d times", count())
	}

	r = run(t, ta.setup, "", s.args("reset", "--yes", "--tables", "keep", "sum")...)
	if r.status != 0 || !strings.Contains(r.stdout, "to earliest: 0 pending entries dropped; tables lasts, sums kept") {
		t.Fatalf("reset --tables keep: %+v", r)
	}
	process(6) // replayed onto the values kept

	// The standalone binary, without the app's code: the tables the
	// registry records.
	r = run(t, nil, "n\n", s.args("reset", "--tables", "clear", "sum")...)
	if r.status != 2 || !strings.Contains(r.stdout, "and deleting the values of its tables lasts, sums?") || count() != 6 {
		t.Fatalf("reset --tables clear, not confirmed: %+v", r)
	}
	r = run(t, nil, "", s.args("reset", "--yes", "--tables", "clear", "sum")...)
	if r.status != 0 || !strings.Contains(r.stdout, "to earliest: 0 pending entries dropped; tables lasts, sums cleared") {
		t.Fatalf("reset --tables clear: %+v", r)
	}
	for p := range 4 {
		for _, name := range []string{"sums", "lasts"} {
			if n := s.client.Exists(context.Background(), s.keys.Table("ticks", "sum", name, p)).Val(); n != 0 {
				t.Fatalf("table %s of partition %d still exists after reset --tables clear", name, p)
			}
		}
	}
	process(3) // replayed from nothing
	r = run(t, nil, "", s.args("table", "sum", "lasts", "k9")...)
	if r.status != 0 || !strings.Contains(r.stdout, "k9   29") {
		t.Fatalf("table after the replay: %+v", r)
	}
}
