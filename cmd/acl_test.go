package cmd

import (
	"context"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/leatdev/leat/internal/keys"
	"github.com/leatdev/leat/internal/redistest"
)

// minimalACL is the ACL README documents for a leat user, without its key
// pattern: the commands a full run uses (workers with a rebalance, halts,
// quarantine, dead letters, reset, send, sendmany, inspect), from INFO
// commandstats after aclScenario (LEAT_MEASURE_ACL=1 go test -run
// TestMeasureACL ./cmd prints them).
// The commands Lua scripts may call but the scenario need not reach
// (HMGET, PEXPIRE, ZREMRANGEBYSCORE) and SELECT (a /db in the URL) are
// added by hand.
var minimalACL = []string{
	"+ping", "+hello", "+select", "+client|id", "+client|unblock", "+cluster|info",
	"+eval", "+evalsha", "+script|load", "+multi", "+exec", "+watch", "+time",
	"+get", "+mget", "+set", "+del", "+exists", "+pexpire",
	"+hget", "+hmget", "+hgetall", "+hkeys", "+hset", "+hdel",
	"+zadd", "+zcount", "+zrange", "+zrangebyscore", "+zremrangebyscore", "+zrem", "+zscore",
	"+xadd", "+xlen", "+xrange", "+xrevrange", "+xread", "+xreadgroup", "+xack", "+xpending",
	"+xautoclaim", "+xclaim", "+xgroup|create", "+xgroup|setid", "+xgroup|delconsumer",
	"+xinfo|stream", "+xinfo|groups", "+xinfo|consumers",
}

// aclScenario runs the core commands of the CLI on s: send, sendmany, two
// workers with a rebalance, dead letters, reset, a quarantine, a halt, and
// inspect.
func aclScenario(t *testing.T, s shop) {
	t.Helper()
	if r := run(t, (&ticksApp{}).setup, "", s.args("send", "ticks", `{"key":"k1","n":-1}`)...); r.status != 0 {
		t.Fatalf("send: %+v", r)
	}
	ta := &ticksApp{fail: "k3"}
	w1 := start(t, ta.setup, s.quiet("worker", "--worker-id", "w1", "--on-error", "dead-letter", "--retries", "0")...)
	a := ta.waitApp(t, w1)
	waitUntil(t, w1, "w1 owns every partition", func() bool { return len(a.Executors()[0].Owned()) == 4 })
	if r := run(t, ta.setup, ticks(20), s.args("sendmany", "ticks", "-")...); r.status != 0 {
		t.Fatalf("sendmany: %+v", r)
	}
	ta2 := &ticksApp{fail: "k3"}
	w2 := start(t, ta2.setup, s.quiet("worker", "--worker-id", "w2", "--on-error", "dead-letter", "--retries", "0")...)
	waitUntil(t, w2, "two partitions each", func() bool {
		o := ownedBy(inspectStream(t, s, "ticks"))
		return o["w1"] == 2 && o["w2"] == 2
	})
	dead := s.keys.DeadLetter("ticks", "count")
	waitUntil(t, w1, "19 events counted, 2 dead-lettered", func() bool {
		return ta.tl.count()+ta2.tl.count() >= 19 && s.client.XLen(context.Background(), dead).Val() == 2
	})
	for _, w := range []*background{w1, w2} {
		if r := w.stop(t); r.status != 0 {
			t.Fatalf("worker: %+v", r)
		}
	}
	s.waitStopped(t)
	if r := run(t, nil, "", s.args("reset", "--yes", "ticks/count")...); r.status != 0 {
		t.Fatalf("reset: %+v", r)
	}
	tq := &ticksApp{fail: "k3"}
	wq := start(t, tq.setup, s.quiet("worker", "--worker-id", "wq", "--on-error", "quarantine")...)
	waitUntil(t, wq, "a quarantined partition", func() bool { return inspectStream(t, s, "ticks").Processors[0].Quarantined == 1 })
	if r := wq.stop(t); r.status != 0 {
		t.Fatalf("worker: %+v", r)
	}
	s.waitStopped(t)
	if r := run(t, nil, "", s.args("reset", "--yes", "ticks/count")...); r.status != 0 {
		t.Fatalf("reset: %+v", r)
	}
	th := &ticksApp{fail: "k3"}
	wh := start(t, th.setup, s.quiet("worker", "--worker-id", "wh")...)
	if r := wh.wait(t); r.status != exitFailure || !strings.Contains(r.stderr, "cannot count k3") {
		t.Fatalf("halted worker: %+v", r)
	}
	for _, args := range [][]string{{"inspect"}, {"inspect", "ticks"}, {"inspect", "--json"}} {
		if r := run(t, nil, "", s.args(args...)...); r.status != 0 || r.stderr != "" {
			t.Fatalf("%s: %+v", args, r)
		}
	}
}

// A user with exactly the minimal ACL and the app's key pattern runs every
// core command.
func TestMinimalACL(t *testing.T) {
	t.Parallel()
	s := newShop(t)
	prefix := strings.TrimSuffix(s.keys.Prefix, ":")
	rules := append([]string{"~" + prefix + ":*"}, minimalACL...)
	s.global[1] = redistest.User(t, rules...)
	aclScenario(t, s)
}

// TestMeasureACL prints the commands aclScenario runs, for minimalACL.
func TestMeasureACL(t *testing.T) {
	if os.Getenv("LEAT_MEASURE_ACL") == "" {
		t.Skip("set LEAT_MEASURE_ACL=1 to measure the commands leat runs")
	}
	srv := redistest.Start(t)
	s := shop{client: srv.Client(t), keys: keys.New("leat", "shop"),
		global: []string{"--redis", srv.URL, "--prefix", "leat", "--app", "shop"}}
	aclScenario(t, s)
	info := srv.Client(t).Info(context.Background(), "commandstats").Val()
	var cmds []string
	for _, line := range strings.Split(info, "\n") {
		if name, ok := strings.CutPrefix(line, "cmdstat_"); ok {
			name, _, _ = strings.Cut(name, ":")
			cmds = append(cmds, "+"+name)
		}
	}
	slices.Sort(cmds)
	t.Logf("%q", cmds)
}

// README documents minimalACL as one ACL SETUSER line.
func TestMinimalACLDocumented(t *testing.T) {
	t.Parallel()
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	want := "ACL SETUSER leat on >PASSWORD resetchannels ~leat:* " + strings.Join(minimalACL, " ")
	if !strings.Contains(string(readme), want) {
		t.Errorf("README.md lacks the line\n%s", want)
	}
}
