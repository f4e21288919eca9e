package cmd

import (
	"strings"
	"testing"
	"time"

	"github.com/leatdev/leat/internal/rdb"
	"github.com/leatdev/leat/internal/tools/redistest"
	"github.com/redis/go-redis/v9"
)

// The CLI works through Redis Sentinel, named by a Sentinel URL (one
// sentinel and the master's name): send, sendmany, worker, inspect, enqueue
// and tasks; and after a failover the worker, the sends and the task
// commands go on with the new master.
func TestSentinelCLI(t *testing.T) {
	if testing.Short() {
		t.Skip("sentinel test")
	}
	t.Parallel()
	sn := redistest.StartSentinel(t)
	url := "redis://" + sn.Addr + "?master_name=" + redistest.SentinelMaster
	s := shop{keys: rdb.NewKeySpace("sentinel", "shop"), global: []string{"--redis", url, "--prefix", "sentinel", "--app", "shop"}}
	ca := &clusterApp{}
	b := start(t, ca.setup, s.quiet("worker")...)
	a := ca.waitApp(t, b)
	if c, ok := a.Client().(*redis.Client); !ok || c.Options().Addr != "FailoverClient" {
		t.Fatalf("the app's client is %T, want a Sentinel client", a.Client())
	}

	if r := run(t, nil, "", s.args("send", "ticks", `{"key":"k1","n":-1}`)...); r.status != 0 {
		t.Fatalf("send: %+v", r)
	}
	if r := run(t, nil, ticks(200), s.args("sendmany", "ticks", "-")...); r.status != 0 || r.stderr != "" {
		t.Fatalf("sendmany: %+v", r)
	}
	waitUntil(t, b, "201 events processed", func() bool { return ca.tl.count() == 201 })
	if rep := inspectStream(t, s, "ticks"); rep.Length != 201 || len(rep.Processors) != 1 {
		t.Fatalf("inspect: %+v", rep)
	}
	greet := func(name string) {
		t.Helper()
		r := run(t, nil, "", s.args("enqueue", "greet", `{"name":"`+name+`"}`)...)
		if r.status != 0 || r.stderr != "" {
			t.Fatalf("enqueue: %+v", r)
		}
		id := strings.TrimSpace(r.stdout)
		if r := run(t, nil, "", s.args("tasks", "wait", id)...); r.status != 0 || r.stdout != "\"hello "+name+"\"\n" {
			t.Fatalf("wait: %+v", r)
		}
	}
	greet("ada")

	sn.Failover(t)
	sn.WaitPromoted(t, 30*time.Second)
	// The sentinel names the new master; a command started now reaches it.
	if r := run(t, nil, ticks(100), s.args("sendmany", "ticks", "-")...); r.status != 0 || r.stderr != "" {
		t.Fatalf("sendmany after the failover: %+v", r)
	}
	waitUntil(t, b, "the events sent after the failover processed", func() bool { return ca.tl.count() >= 301 })
	greet("grace")
	if rep := inspectStream(t, s, "ticks"); rep.Length != 301 {
		t.Fatalf("inspect after the failover: length %d, want 301", rep.Length)
	}
	if r := b.stop(t); r.status != 0 {
		t.Fatalf("worker: %+v", r)
	}
}

// A Sentinel URL naming a master the sentinel does not monitor, or the
// wrong credentials for the master, fail with what to correct.
func TestSentinelCLIErrors(t *testing.T) {
	if testing.Short() {
		t.Skip("sentinel test")
	}
	t.Parallel()
	sn := redistest.StartSentinel(t)
	at := "redis://" + sn.Addr
	wantFailure(t, run(t, nil, "", "--redis", at+"?master_name=nosuch", "--app", "shop", "inspect"), exitUsage,
		"the sentinels at "+at+` know no master named "nosuch"`, "SENTINEL MASTERS")
	wantFailure(t, run(t, nil, "", "--redis", at+"?master_name=leat&username=nosuch&password=x", "--app", "shop", "inspect"), exitFailure,
		"Redis refused the credentials: WRONGPASS", "the master's are ?username= and ?password=")
}

// bench, which runs on a single server, refuses a Sentinel URL.
func TestBenchRefusesSentinel(t *testing.T) {
	t.Parallel()
	wantFailure(t, run(t, nil, "", "--redis", "redis://h:1?master_name=m", "bench"), exitUsage, "bench runs on a single Redis server", "Sentinel URL")
}
