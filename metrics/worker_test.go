package metrics_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/leatdev/leat/app"
	"github.com/leatdev/leat/executor"
	"github.com/leatdev/leat/internal/tools/redistest"
	"github.com/leatdev/leat/metrics"
	"github.com/leatdev/leat/stream"
)

// node is one worker of an app with its exporter and handler.
type node struct {
	a       *app.App
	h       http.Handler
	cancel  context.CancelFunc
	stopped chan error
}

func startNode(t *testing.T, prefix string, c *redistest.Server) *node {
	t.Helper()
	x, err := metrics.New(metrics.Config{CacheFor: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	a, err := app.New(app.Config{Name: "shop", Client: c.Client(t), KeyPrefix: prefix, Hooks: []executor.Hook{x},
		LeaderLease: time.Second,
		Processing:  executor.Options{LockExpiry: time.Second, ReadBlock: 100 * time.Millisecond, Grace: time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	orders, err := stream.Declare[order](a, "orders", stream.KeyField("customer"), stream.Partitions(2))
	if err != nil {
		t.Fatal(err)
	}
	if err := app.Process(a, orders, "totals", func(context.Context, *stream.Events[order]) error { return nil }); err != nil {
		t.Fatal(err)
	}
	ready := metrics.WorkerReady(a.Executors, a.Ping)
	x.Worker(a.Name(), a.IsLeader, ready)
	return &node{a: a, h: metrics.NewHandler(x, ready), stopped: make(chan error, 1)}
}

func (n *node) run() {
	ctx, cancel := context.WithCancel(context.Background())
	n.cancel = cancel
	go func() { n.stopped <- n.a.Run(ctx) }()
}

func (n *node) stop(t *testing.T) {
	t.Helper()
	if n.cancel == nil {
		return
	}
	n.cancel()
	n.cancel = nil
	if err := <-n.stopped; err != nil {
		t.Fatal(err)
	}
}

// gauge returns the value of leat_leader or leat_ready with app="shop".
func (n *node) gauge(t *testing.T, metric string) (float64, bool) {
	t.Helper()
	_, body := get(t, n.h, "/metrics")
	return sample(body, metric, `app="shop"`)
}

// TestWorkerGauges: leat_ready follows /readyz, and exactly one running
// worker of the app reports leat_leader 1; when it stops, another does.
func TestWorkerGauges(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	prefix := "wg:"
	a, b := startNode(t, prefix, srv), startNode(t, prefix, srv)
	defer a.stop(t)
	defer b.stop(t)

	for _, n := range []*node{a, b} {
		if v, ok := n.gauge(t, "leat_ready"); !ok || v != 0 {
			t.Errorf("leat_ready before the worker runs = %v (found %v), want 0", v, ok)
		}
		if v, ok := n.gauge(t, "leat_leader"); !ok || v != 0 {
			t.Errorf("leat_leader before the worker runs = %v (found %v), want 0", v, ok)
		}
	}

	a.run()
	b.run()
	redistest.Eventually(t, 15*time.Second, "both ready, one leader", func() bool {
		ra, _ := a.gauge(t, "leat_ready")
		rb, _ := b.gauge(t, "leat_ready")
		la, _ := a.gauge(t, "leat_leader")
		lb, _ := b.gauge(t, "leat_leader")
		return ra == 1 && rb == 1 && la+lb == 1
	})
	for _, n := range []*node{a, b} {
		code, _ := get(t, n.h, "/readyz")
		if code != http.StatusOK {
			t.Errorf("leat_ready 1 but /readyz %d", code)
		}
	}

	leader, other := a, b
	if v, _ := b.gauge(t, "leat_leader"); v == 1 {
		leader, other = b, a
	}
	leader.stop(t)
	if v, _ := leader.gauge(t, "leat_ready"); v != 0 {
		t.Errorf("leat_ready of a stopped worker = %v, want 0", v)
	}
	if v, _ := leader.gauge(t, "leat_leader"); v != 0 {
		t.Errorf("leat_leader of a stopped worker = %v, want 0", v)
	}
	redistest.Eventually(t, 15*time.Second, "the other worker leads", func() bool {
		v, _ := other.gauge(t, "leat_leader")
		return v == 1
	})
}

// TestWorkerGaugesUnset: an exporter told nothing about the worker
// reports neither gauge (no false "not ready" or "no leader").
func TestWorkerGaugesUnset(t *testing.T) {
	x, err := metrics.New(metrics.Config{})
	if err != nil {
		t.Fatal(err)
	}
	_, body := get(t, metrics.NewHandler(x, nil), "/metrics")
	for _, m := range []string{"leat_leader", "leat_ready"} {
		if _, ok := sample(body, m); ok {
			t.Errorf("%s reported without Worker", m)
		}
	}
}
