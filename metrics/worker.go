package metrics

import (
	"context"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
)

var (
	leaderDesc = prometheus.NewDesc("leat_leader",
		"1 while this worker holds the app's leader lease, else 0.", []string{"app"}, nil)
	readyDesc = prometheus.NewDesc("leat_ready",
		"1 when this worker is ready (the check /readyz answers with), else 0.", []string{"app"}, nil)
)

// worker is the collector of the worker's own state: its leadership and
// its readiness, evaluated on scrape.
type worker struct {
	mu     sync.Mutex
	app    string
	leader func() bool
	ready  func(context.Context) error
}

// Worker makes scrapes report leat_leader (1 while leader returns true)
// and leat_ready (1 when ready returns nil, the check given to NewHandler
// for /readyz), labelled with the app's name. With an app:
// Worker(a.Name(), a.IsLeader, WorkerReady(a.Executors, a.Ping)). A nil
// leader or ready leaves its gauge out. The ready check runs on each
// scrape, bounded like a /readyz request: it costs what a probe costs.
func (x *Exporter) Worker(app string, leader func() bool, ready func(context.Context) error) {
	x.worker.mu.Lock()
	defer x.worker.mu.Unlock()
	x.worker.app, x.worker.leader, x.worker.ready = app, leader, ready
}

// Describe implements prometheus.Collector.
func (w *worker) Describe(ch chan<- *prometheus.Desc) {
	ch <- leaderDesc
	ch <- readyDesc
}

// Collect implements prometheus.Collector.
func (w *worker) Collect(ch chan<- prometheus.Metric) {
	w.mu.Lock()
	app, leader, ready := w.app, w.leader, w.ready
	w.mu.Unlock()
	if leader != nil {
		ch <- prometheus.MustNewConstMetric(leaderDesc, prometheus.GaugeValue, boolValue(leader()), app)
	}
	if ready != nil {
		ctx, cancel := context.WithTimeout(context.Background(), readyTimeout)
		defer cancel()
		ch <- prometheus.MustNewConstMetric(readyDesc, prometheus.GaugeValue, boolValue(ready(ctx) == nil), app)
	}
}

func boolValue(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
