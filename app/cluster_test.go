package app_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/leatdev/leat/app"
	"github.com/leatdev/leat/internal/tools/redistest"
	"github.com/leatdev/leat/stream"
	"github.com/redis/go-redis/v9"
)

// On Redis Cluster the partitions of a stream spread over the masters; the
// runtime reads them with its fenced script and polls idle partitions.
func TestCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("cluster test")
	}
	t.Parallel()
	cl := redistest.StartCluster(t, 3)
	r := newRecorder()
	var s *stream.Stream[event]
	var counts *stream.Table[int]
	newWorker := func() *worker {
		c := cl.Client(t)
		a, err := app.New(app.Config{Name: "shop", Client: c, Logger: testLogger(), Processing: fastOptions(), LeaderLease: time.Second})
		if err != nil {
			t.Fatal(err)
		}
		s, err = stream.Declare[event](a, "events", stream.KeyField("key"), stream.Partitions(8))
		if err != nil {
			t.Fatal(err)
		}
		if err := app.Process(a, s, "p", collect(r)); err != nil {
			t.Fatal(err)
		}
		// A table: its hash, the lock and the stream share the partition's
		// slot, so the commit script runs on one master.
		tbl, err := stream.DeclareTable[int](s, "count", "counts")
		if err != nil {
			t.Fatal(err)
		}
		counts = tbl
		err = app.Process(a, s, "count", func(ctx context.Context, events *stream.Events[event]) error {
			st := tbl.In(events)
			for e := range events.All() {
				if err := addOne(ctx, st, string(e.Key)); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		return startWorker(t, a)
	}
	w1 := newWorker()
	keys := []string{"a", "b", "c", "d", "e", "f", "g", "h", "i", "j"}
	sent := sendEvents(t, s, keys, 10, 0)
	w2 := newWorker()
	redistest.Eventually(t, 20*time.Second, "the first events", func() bool { return r.count() == len(sent) })
	sent = append(sent, sendEvents(t, s, keys, 10, 100)...)
	redistest.Eventually(t, 20*time.Second, "events sent with two workers", func() bool { return r.count() == len(sent) })
	if err := w2.stop(t); err != nil {
		t.Fatal(err)
	}
	sent = append(sent, sendEvents(t, s, keys, 10, 200)...)
	redistest.Eventually(t, 20*time.Second, "events after a leave", func() bool { return r.count() == len(sent) })
	waitCounts(t, counts, sentPerKey(sent), 20*time.Second)
	if err := w1.stop(t); err != nil {
		t.Fatal(err)
	}
	r.exactlyOnce(t, sent)
	r.inOrder(t, false)

	// The partitions live on more than one master.
	c := cl.Client(t)
	nodes := map[string]bool{}
	for p := range 8 {
		slot := c.ClusterKeySlot(t.Context(), app.PartitionKey(s, p)).Val()
		for _, sl := range c.ClusterSlots(t.Context()).Val() {
			if slot >= int64(sl.Start) && slot <= int64(sl.End) {
				nodes[sl.Nodes[0].Addr] = true
			}
		}
	}
	if len(nodes) < 2 {
		t.Fatalf("8 partitions on %d master(s), want them spread", len(nodes))
	}
}

// Config.Cluster, or a RedisURL naming more nodes, makes the App talk to a
// Redis Cluster through a client of its own.
func TestClusterFromConfig(t *testing.T) {
	if testing.Short() {
		t.Skip("cluster test")
	}
	t.Parallel()
	cl := redistest.StartCluster(t, 3)
	for _, tc := range []struct {
		name string
		cfg  app.Config
	}{
		{"Cluster", app.Config{RedisURL: "redis://" + cl.Addrs[1], Cluster: true}},
		{"cluster URL", app.Config{RedisURL: "redis://" + cl.Addrs[0] + "?addr=" + cl.Addrs[1] + "&addr=" + cl.Addrs[2]}},
		{"cluster URL with db 0", app.Config{RedisURL: "redis://" + cl.Addrs[2] + "/0", Cluster: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := tc.cfg
			cfg.Name, cfg.KeyPrefix, cfg.Logger = "shop", strings.ReplaceAll(tc.name, " ", "-"), testLogger()
			a, err := app.New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer a.Close()
			if _, ok := a.Client().(*redis.ClusterClient); !ok {
				t.Fatalf("client %T, want a cluster client", a.Client())
			}
			if err := a.Ping(t.Context()); err != nil {
				t.Fatal(err)
			}
			s, err := stream.Declare[event](a, "events", stream.KeyField("key"), stream.Partitions(8))
			if err != nil {
				t.Fatal(err)
			}
			sent := sendEvents(t, s, []string{"a", "b", "c", "d", "e", "f", "g", "h"}, 5, 0)
			var total int64
			for p := range 8 {
				total += a.Client().XLen(t.Context(), app.PartitionKey(s, p)).Val()
			}
			if total != int64(len(sent)) {
				t.Fatalf("%d entries in the partitions, want %d", total, len(sent))
			}
		})
	}
}

// What a cluster cannot do is refused by New.
func TestClusterConfigErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		cfg  app.Config
		want string
	}{
		{app.Config{RedisURL: "redis://h:1/2", Cluster: true}, "database 0 only"},
		{app.Config{RedisURL: "unix:///tmp/redis.sock", Cluster: true}, "redis:// or rediss://"},
		{app.Config{RedisURL: "redis://h:1?addr=h2", Cluster: true}, "unable to parse addr param"},
		{app.Config{RedisURL: "redis://h:1?addr=h2:2&nosuch=1"}, "unexpected option: nosuch"},
		{app.Config{RedisURL: "redis://h:1?addr=h2:2", TLS: app.TLSConfig{ServerName: "h"}}, "rediss://"},
	} {
		tc.cfg.Name = "shop"
		if _, err := app.New(tc.cfg); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("New(%+v) = %v, want an error with %q", tc.cfg, err, tc.want)
		}
	}
}

// A RedisURL naming a cluster node, without Config.Cluster, fails Ping and
// Run with ErrClusterNode before anything is written (found with CLUSTER
// INFO, or INFO for a user who may not run CLUSTER); a user who may run
// neither gets it at the first MOVED reply.
func TestClusterNodeWithoutCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("cluster test")
	}
	t.Parallel()
	cl := redistest.StartCluster(t, 3)
	a, err := app.New(app.Config{Name: "shop", RedisURL: "redis://" + cl.Addrs[0], Logger: testLogger()})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	if err := a.Ping(t.Context()); !errors.Is(err, app.ErrClusterNode) {
		t.Fatalf("Ping: %v, want ErrClusterNode", err)
	}
	if _, err := stream.Declare[event](a, "events", stream.KeyField("key")); err != nil {
		t.Fatal(err)
	}
	if err := a.Run(t.Context()); !errors.Is(err, app.ErrClusterNode) {
		t.Fatalf("Run: %v, want ErrClusterNode", err)
	}
	c := cl.Client(t)
	err = c.ForEachMaster(t.Context(), func(ctx context.Context, m *redis.Client) error {
		if n := m.DBSize(ctx).Val(); n != 0 {
			return fmt.Errorf("master %s holds %d keys", m.Options().Addr, n)
		}
		// A user who may not run CLUSTER, and one who may run neither
		// INFO nor CLUSTER.
		if err := m.Do(ctx, "ACL", "SETUSER", "info", "on", ">pw", "~*", "&*", "+@all", "-cluster").Err(); err != nil {
			return err
		}
		return m.Do(ctx, "ACL", "SETUSER", "blind", "on", ">pw", "~*", "&*", "+@all", "-info", "-cluster").Err()
	})
	if err != nil {
		t.Fatal(err)
	}
	i, err := app.New(app.Config{Name: "shop", RedisURL: "redis://info:pw@" + cl.Addrs[0], Logger: testLogger()})
	if err != nil {
		t.Fatal(err)
	}
	defer i.Close()
	if err := i.Ping(t.Context()); !errors.Is(err, app.ErrClusterNode) {
		t.Fatalf("Ping by a user without CLUSTER: %v, want ErrClusterNode", err)
	}
	b, err := app.New(app.Config{Name: "shop", RedisURL: "redis://blind:pw@" + cl.Addrs[0], Logger: testLogger()})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if err := b.Ping(t.Context()); err != nil {
		t.Fatalf("Ping without INFO: %v", err)
	}
	s, err := stream.Declare[event](b, "events", stream.KeyField("key"), stream.Partitions(16))
	if err != nil {
		t.Fatal(err)
	}
	recs := make([]event, 100)
	for i := range recs {
		recs[i] = event{Key: fmt.Sprint(i), Seq: i}
	}
	if _, err := s.SendMany(t.Context(), recs); !errors.Is(err, app.ErrClusterNode) {
		t.Fatalf("SendMany: %v, want ErrClusterNode", err)
	}
	if err := b.Client().MGet(t.Context(), "a", "b", "c").Err(); !errors.Is(err, app.ErrClusterNode) || !strings.Contains(err.Error(), "CROSSSLOT") {
		t.Fatalf("MGET across slots: %v, want ErrClusterNode", err)
	}
}

// A cluster client made from a rediss:// URL uses Config.TLS on its
// connections: with the CA and client certificate the TLS handshake with
// a server that requires them succeeds, and the server (not a cluster node)
// answers the cluster client's first command with its own error.
func TestClusterTLS(t *testing.T) {
	t.Parallel()
	srv := redistest.StartTLS(t, true)
	full := app.TLSConfig{CAFile: srv.Files.CA, CertFile: srv.Files.ClientCert, KeyFile: srv.Files.ClientKey}
	for _, tc := range []struct {
		tls  app.TLSConfig
		want string
	}{
		{full, "cluster support disabled"},
		{app.TLSConfig{CAFile: srv.Files.CA}, ""},
	} {
		a, err := app.New(app.Config{Name: "shop", RedisURL: srv.URL, Cluster: true, TLS: tc.tls, Logger: testLogger()})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
		err = a.Ping(ctx)
		cancel()
		a.Close()
		switch {
		case err == nil:
			t.Errorf("TLS %+v: Ping of a server that is no cluster node succeeded", tc.tls)
		case tc.want != "" && !strings.Contains(err.Error(), tc.want):
			t.Errorf("TLS %+v: Ping: %v, want %q", tc.tls, err, tc.want)
		case tc.want == "" && strings.Contains(err.Error(), "cluster support disabled"):
			t.Errorf("TLS %+v: Ping reached the server without a client certificate: %v", tc.tls, err)
		}
	}
}
