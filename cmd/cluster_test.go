package cmd

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/leatdev/leat/app"
	"github.com/leatdev/leat/internal/rdb"
	"github.com/leatdev/leat/internal/tools/redistest"
	"github.com/leatdev/leat/task"
	"github.com/redis/go-redis/v9"
)

// clusterApp is ticksApp with task queue "greet" too.
type clusterApp struct{ ticksApp }

func (ca *clusterApp) setup(cfg app.Config) (*app.App, error) {
	a, err := ca.ticksApp.setup(cfg)
	if err != nil {
		return nil, err
	}
	_, err = task.Handle(a, "greet", func(ctx context.Context, tk *task.Task[greet]) (string, error) {
		return "hello " + tk.Payload.Name, nil
	})
	if err != nil {
		a.Close()
		return nil, err
	}
	return a, nil
}

// The CLI works on a 3-master Redis Cluster named by any node's URL with
// --cluster (or LEAT_REDIS_CLUSTER=1), or by a URL naming several nodes:
// send, sendmany, worker, inspect, enqueue and tasks.
func TestClusterCLI(t *testing.T) {
	if testing.Short() {
		t.Skip("cluster test")
	}
	t.Parallel()
	cl := redistest.StartCluster(t, 3)
	clusterURL := fmt.Sprintf("redis://%s?addr=%s&addr=%s", cl.Addrs[0], cl.Addrs[1], cl.Addrs[2])
	for _, tc := range []struct {
		name  string
		redis []string
	}{
		{"flag", []string{"--redis", "redis://" + cl.Addrs[1], "--cluster"}},
		{"cluster URL", []string{"--redis", clusterURL}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			prefix := strings.ReplaceAll(tc.name, " ", "-")
			s := shop{keys: rdb.NewKeySpace(prefix, "shop"), global: append(tc.redis, "--prefix", prefix, "--app", "shop")}
			ca := &clusterApp{}
			b := start(t, ca.setup, s.quiet("worker")...)
			a := ca.waitApp(t, b)
			if _, ok := a.Client().(*redis.ClusterClient); !ok {
				t.Fatalf("the app's client is %T, want a cluster client", a.Client())
			}

			if r := run(t, nil, "", s.args("send", "ticks", `{"key":"k1","n":-1}`)...); r.status != 0 {
				t.Fatalf("send: %+v", r)
			}
			if r := run(t, nil, ticks(200), s.args("sendmany", "ticks", "-")...); r.status != 0 || r.stderr != "" {
				t.Fatalf("sendmany: %+v", r)
			}
			waitUntil(t, b, "201 events processed", func() bool { return ca.tl.count() == 201 })

			rep := inspectStream(t, s, "ticks")
			if rep.Length != 201 || len(rep.Partitions) != 4 || len(rep.Processors) != 1 {
				t.Fatalf("inspect: %+v", rep)
			}
			waitUntil(t, b, "no lag", func() bool {
				pr := inspectStream(t, s, "ticks").Processors[0]
				return pr.Lag != nil && *pr.Lag == 0 && pr.Pending == 0 && pr.Owned == 4
			})
			if r := run(t, nil, "", s.args("inspect")...); r.status != 0 || !strings.Contains(r.stdout, "ticks") {
				t.Fatalf("inspect: %+v", r)
			}

			r := run(t, nil, "", s.args("enqueue", "greet", `{"name":"ada"}`)...)
			if r.status != 0 || r.stderr != "" {
				t.Fatalf("enqueue: %+v", r)
			}
			id := strings.TrimSpace(r.stdout)
			if r := run(t, nil, "", s.args("tasks", "wait", id)...); r.status != 0 || r.stdout != "\"hello ada\"\n" {
				t.Fatalf("wait: %+v", r)
			}
			if r := run(t, nil, "", s.args("tasks", "show", id)...); r.status != 0 || !strings.Contains(r.stdout, "succeeded") {
				t.Fatalf("show: %+v", r)
			}

			if r := b.stop(t); r.status != 0 {
				t.Fatalf("worker: %+v", r)
			}
		})
	}
}

// LEAT_REDIS_CLUSTER=1 is --cluster. (Not parallel: it sets the
// environment.)
func TestClusterEnv(t *testing.T) {
	if testing.Short() {
		t.Skip("cluster test")
	}
	cl := redistest.StartCluster(t, 3)
	t.Setenv("LEAT_REDIS_CLUSTER", "1")
	s := shop{keys: rdb.NewKeySpace("env", "shop"), global: []string{"--redis", "redis://" + cl.Addrs[2], "--prefix", "env", "--app", "shop"}}
	if r := run(t, nil, ticks(100), s.args("sendmany", "--key", "key", "--partitions", "8", "ticks", "-")...); r.status != 0 || r.stderr != "" {
		t.Fatalf("sendmany: %+v", r)
	}
	if rep := inspectStream(t, s, "ticks"); rep.Length != 100 || len(rep.Partitions) != 8 {
		t.Fatalf("inspect: %+v", rep)
	}
	t.Setenv("LEAT_REDIS_CLUSTER", "yes please")
	wantFailure(t, run(t, nil, "", s.args("inspect")...), 2, "LEAT_REDIS_CLUSTER")
}

// --cluster naming a server that is no cluster node says so; bench, which
// runs on a single server, refuses a cluster.
func TestClusterFlagOnPlainServer(t *testing.T) {
	t.Parallel()
	s := newShop(t)
	r := run(t, nil, "", append([]string{"--cluster"}, s.args("inspect")...)...)
	wantFailure(t, r, exitUsage, "is not a node of a Redis Cluster", "drop --cluster")
	wantFailure(t, run(t, nil, "", "--cluster", "--redis", redistest.URL(t), "bench"), exitUsage, "bench runs on a single Redis server")
	wantFailure(t, run(t, nil, "", "--redis", "redis://h:1?addr=h:2", "bench"), exitUsage, "a Redis Cluster")
}

// A plain URL naming a cluster node, without --cluster, fails at connect
// with the fix, before anything is written.
func TestClusterNodeWithoutClusterFlag(t *testing.T) {
	if testing.Short() {
		t.Skip("cluster test")
	}
	t.Parallel()
	cl := redistest.StartCluster(t, 3)
	s := shop{keys: rdb.NewKeySpace("plain", "shop"), global: []string{"--redis", "redis://" + cl.Addrs[0], "--prefix", "plain", "--app", "shop"}}
	want := []string{"is a node of a Redis Cluster", "--cluster", "LEAT_REDIS_CLUSTER=1", "redis://" + cl.Addrs[0]}
	wantFailure(t, run(t, nil, ticks(100), s.args("sendmany", "--key", "key", "--partitions", "8", "ticks", "-")...), 2, want...)
	wantFailure(t, run(t, nil, "", s.args("send", "--key", "key", "--partitions", "8", "ticks", `{"key":"a"}`)...), 2, want...)
	wantFailure(t, run(t, nil, "", s.args("inspect")...), 2, want...)
	ta := &ticksApp{}
	wantFailure(t, run(t, ta.setup, "", s.args("worker")...), 2, want...)

	c := cl.Client(t)
	err := c.ForEachMaster(context.Background(), func(ctx context.Context, m *redis.Client) error {
		if n := m.DBSize(ctx).Val(); n != 0 {
			return fmt.Errorf("master %s holds %d keys", m.Options().Addr, n)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// On a cluster, the documented ACL with +cluster|slots (which the cluster
// client reads the slot map with) runs a worker, sendmany and inspect.
func TestClusterMinimalACL(t *testing.T) {
	if testing.Short() {
		t.Skip("cluster test")
	}
	t.Parallel()
	cl := redistest.StartCluster(t, 3)
	rules := append([]any{"ACL", "SETUSER", "leat", "on", ">pw", "resetchannels", "~acl:*", "+cluster|slots"}, anys(minimalACL)...)
	err := cl.Client(t).ForEachMaster(context.Background(), func(ctx context.Context, m *redis.Client) error {
		return m.Do(ctx, rules...).Err()
	})
	if err != nil {
		t.Fatal(err)
	}
	s := shop{keys: rdb.NewKeySpace("acl", "shop"), global: []string{"--redis", "redis://leat:pw@" + cl.Addrs[0], "--cluster", "--prefix", "acl", "--app", "shop"}}
	ca := &clusterApp{}
	b := start(t, ca.setup, s.quiet("worker")...)
	ca.waitApp(t, b)
	if r := run(t, nil, ticks(100), s.args("sendmany", "ticks", "-")...); r.status != 0 || r.stderr != "" {
		t.Fatalf("sendmany: %+v", r)
	}
	waitUntil(t, b, "100 events processed", func() bool { return ca.tl.count() == 100 })
	if rep := inspectStream(t, s, "ticks"); rep.Length != 100 {
		t.Fatalf("inspect: %+v", rep)
	}
	if r := b.stop(t); r.status != 0 {
		t.Fatalf("worker: %+v", r)
	}
}

func anys(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}
