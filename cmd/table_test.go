package cmd

import (
	"context"
	"encoding/json"
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
	// Read through an app of the test's own (every command of the CLI runs
	// the setup on an app of its own, closed when the command ends).
	ra, err := app.New(app.Config{Name: "shop", Client: s.client, KeyPrefix: s.keys.Prefix})
	if err != nil {
		t.Fatal(err)
	}
	defer ra.Close()
	rs, err := stream.Declare[tick](ra, "ticks", stream.KeyField("key"), stream.Partitions(4))
	if err != nil {
		t.Fatal(err)
	}
	sumsTable, err := stream.DeclareTable[sums](rs, "sum", "sums")
	if err != nil {
		t.Fatal(err)
	}
	waitUntil(t, b, "30 ticks summed", func() bool {
		v, _, err := sumsTable.Get(context.Background(), "k9")
		return err == nil && v.Count == 3
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
	if r.status != 0 || !strings.Contains(r.stdout, "0 quarantined; tables lasts (json), sums (msgpack)") {
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
