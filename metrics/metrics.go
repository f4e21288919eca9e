// Package metrics exports a leat worker's metrics to Prometheus.
//
// An [Exporter] implements the runtime's hook interfaces (executor.Hook*):
// give it to app.Config.Hooks and it counts events processed and failed,
// handler latency, batch sizes, lock losses, rebalances, quarantines and
// entries trimmed. [Exporter.Gather] adds gauges of lag, pending entries,
// the age of the oldest pending entry and partition lengths, read from
// Redis on scrape through package inspect (O(partitions) pipelined
// commands per stream) and cached for a few seconds, so that frequent
// scrapes, or many workers, do not multiply the load on Redis.
//
// Labels are stream, processor and partition: their number is bounded by
// the partitions of the app's streams (no entry IDs, no executor IDs).
//
// The package never starts an HTTP server: [NewHandler] returns a handler
// serving /metrics, /healthz and /readyz for the caller to mount, as "leat
// worker --metrics-addr" does.
package metrics

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"time"

	"github.com/leatdev/leat/executor"
	"github.com/leatdev/leat/inspect"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

// DefaultCacheFor is how long gathered lag and pending figures are reused
// by default.
const DefaultCacheFor = 5 * time.Second

// gatherTimeout bounds the Redis reads of one scrape.
const gatherTimeout = 5 * time.Second

// Config configures an Exporter. The zero value is usable.
type Config struct {
	// Registry receives the exporter's metrics. Default: a new registry
	// with the Go runtime and process collectors.
	Registry *prometheus.Registry
	// CacheFor is how long figures gathered from Redis are reused by the
	// next scrapes. Default DefaultCacheFor.
	CacheFor time.Duration
}

// Exporter counts what the runtime reports through its hooks and gathers
// lag and pending figures on scrape. Its methods are safe for concurrent
// use.
type Exporter struct {
	reg *prometheus.Registry

	processed   *prometheus.CounterVec
	failed      *prometheus.CounterVec
	latency     *prometheus.HistogramVec
	batch       *prometheus.HistogramVec
	lockLost    *prometheus.CounterVec
	rebalances  *prometheus.CounterVec
	owned       *prometheus.GaugeVec
	quarantines *prometheus.CounterVec
	trimmed     *prometheus.CounterVec

	gauges *gatherer
}

// Interfaces the Exporter implements.
var (
	_ executor.HookEventsProcessed      = (*Exporter)(nil)
	_ executor.HookProcessorFailed      = (*Exporter)(nil)
	_ executor.HookPartitionQuarantined = (*Exporter)(nil)
	_ executor.HookLockLost             = (*Exporter)(nil)
	_ executor.HookEntriesTrimmed       = (*Exporter)(nil)
	_ executor.HookRebalanced           = (*Exporter)(nil)
)

var (
	partitionLabels = []string{"stream", "processor", "partition"}
	processorLabels = []string{"stream", "processor"}
)

// New returns an exporter registered in cfg.Registry.
func New(cfg Config) (*Exporter, error) {
	if cfg.Registry == nil {
		cfg.Registry = prometheus.NewRegistry()
		cfg.Registry.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	}
	if cfg.CacheFor <= 0 {
		cfg.CacheFor = DefaultCacheFor
	}
	x := &Exporter{
		reg: cfg.Registry,
		processed: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "leat_events_processed_total",
			Help: "Events processed and acknowledged."}, partitionLabels),
		failed: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "leat_processor_failures_total",
			Help: "Processor calls that failed, before retries and the failure policy."}, partitionLabels),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "leat_handler_duration_seconds",
			Help:    "Time the processor's loop body took for one event or batch.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 4, 10)}, processorLabels),
		batch: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "leat_batch_size",
			Help:    "Events per successfully processed event or batch.",
			Buckets: []float64{1, 2, 5, 10, 20, 50, 100, 200, 500, 1000}}, processorLabels),
		lockLost: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "leat_lock_losses_total",
			Help: "Partition locks lost or no longer trusted."}, partitionLabels),
		rebalances: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "leat_rebalances_total",
			Help: "Assignments applied by this worker's executors."}, processorLabels),
		owned: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "leat_partitions_assigned",
			Help: "Partitions the last applied assignment gives this worker."}, processorLabels),
		quarantines: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "leat_quarantines_total",
			Help: "Partitions stopped by the Quarantine policy."}, partitionLabels),
		trimmed: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "leat_entries_trimmed_total",
			Help: "Entries trimmed by retention before the processor read them."}, partitionLabels),
		gauges: &gatherer{cacheFor: cfg.CacheFor},
	}
	for _, c := range []prometheus.Collector{x.processed, x.failed, x.latency, x.batch, x.lockLost,
		x.rebalances, x.owned, x.quarantines, x.trimmed, x.gauges} {
		if err := cfg.Registry.Register(c); err != nil {
			return nil, err
		}
	}
	return x, nil
}

// Registry returns the registry holding the exporter's metrics.
func (x *Exporter) Registry() *prometheus.Registry { return x.reg }

// Gather makes scrapes report the lag, pending entries, oldest pending age
// and length of every partition of the streams that streams returns, for
// each processor of those streams recorded in Redis, read through in.
// Figures are cached for Config.CacheFor. Every worker gathering the same
// streams reports the same values: aggregate them with max by (stream,
// processor, partition).
func (x *Exporter) Gather(in *inspect.Inspector, streams func() []string) {
	x.gauges.mu.Lock()
	defer x.gauges.mu.Unlock()
	x.gauges.in, x.gauges.streams, x.gauges.at = in, streams, time.Time{}
}

func part(p int) string { return strconv.Itoa(p) }

// OnEventsProcessed implements executor.HookEventsProcessed.
func (x *Exporter) OnEventsProcessed(stream, processor string, partition, events int, took time.Duration) {
	x.processed.WithLabelValues(stream, processor, part(partition)).Add(float64(events))
	x.latency.WithLabelValues(stream, processor).Observe(took.Seconds())
	x.batch.WithLabelValues(stream, processor).Observe(float64(events))
}

// OnProcessorFailed implements executor.HookProcessorFailed.
func (x *Exporter) OnProcessorFailed(stream, processor string, partition int, _ error) {
	x.failed.WithLabelValues(stream, processor, part(partition)).Inc()
}

// OnPartitionQuarantined implements executor.HookPartitionQuarantined.
func (x *Exporter) OnPartitionQuarantined(stream, processor string, partition int, _ error) {
	x.quarantines.WithLabelValues(stream, processor, part(partition)).Inc()
}

// OnLockLost implements executor.HookLockLost.
func (x *Exporter) OnLockLost(stream, processor string, partition int) {
	x.lockLost.WithLabelValues(stream, processor, part(partition)).Inc()
}

// OnEntriesTrimmed implements executor.HookEntriesTrimmed.
func (x *Exporter) OnEntriesTrimmed(stream, processor string, partition int, entries int64) {
	x.trimmed.WithLabelValues(stream, processor, part(partition)).Add(float64(entries))
}

// OnRebalanced implements executor.HookRebalanced.
func (x *Exporter) OnRebalanced(stream, processor string, owned []int) {
	x.rebalances.WithLabelValues(stream, processor).Inc()
	x.owned.WithLabelValues(stream, processor).Set(float64(len(owned)))
}

// gatherer is the collector of the figures read from Redis on scrape.
type gatherer struct {
	cacheFor time.Duration

	mu      sync.Mutex // held during a refresh: concurrent scrapes share it
	in      *inspect.Inspector
	streams func() []string
	at      time.Time // when reports were read; zero: never
	reports []*inspect.StreamReport
	errors  float64
}

var (
	lagDesc = prometheus.NewDesc("leat_lag",
		"Entries of the partition not yet delivered to the processor (XINFO GROUPS).", partitionLabels, nil)
	pendingDesc = prometheus.NewDesc("leat_pending",
		"Entries delivered to the processor and not acknowledged (XINFO GROUPS).", partitionLabels, nil)
	oldestDesc = prometheus.NewDesc("leat_oldest_pending_age_seconds",
		"Age of the partition's oldest pending entry, from its ID (XPENDING summary); 0 when none.", partitionLabels, nil)
	quarantinedDesc = prometheus.NewDesc("leat_partition_quarantined",
		"1 when the partition is stopped by the Quarantine or Halt policy.", partitionLabels, nil)
	lengthDesc = prometheus.NewDesc("leat_partition_length",
		"Entries the partition keeps (XINFO STREAM).", []string{"stream", "partition"}, nil)
	sizeDesc = prometheus.NewDesc("leat_partition_size",
		"Retention size of each partition of the stream (XADD MAXLEN ~).", []string{"stream"}, nil)
	errorsDesc = prometheus.NewDesc("leat_gather_errors_total",
		"Scrapes whose reads of lag and pending from Redis failed.", nil, nil)
)

// Describe implements prometheus.Collector.
func (g *gatherer) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{lagDesc, pendingDesc, oldestDesc, quarantinedDesc, lengthDesc, sizeDesc, errorsDesc} {
		ch <- d
	}
}

// Collect implements prometheus.Collector: it reads the figures when the
// cached ones are older than cacheFor.
func (g *gatherer) Collect(ch chan<- prometheus.Metric) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.in != nil && time.Since(g.at) >= g.cacheFor {
		g.refresh()
	}
	ch <- prometheus.MustNewConstMetric(errorsDesc, prometheus.CounterValue, g.errors)
	for _, r := range g.reports {
		ch <- prometheus.MustNewConstMetric(sizeDesc, prometheus.GaugeValue, float64(r.Size), r.Stream)
		for _, p := range r.Partitions {
			ch <- prometheus.MustNewConstMetric(lengthDesc, prometheus.GaugeValue, float64(p.Length), r.Stream, part(p.Partition))
		}
		for _, pr := range r.Processors {
			for _, pp := range pr.Partitions {
				labels := []string{r.Stream, pr.Processor, part(pp.Partition)}
				if pp.Lag != nil {
					ch <- prometheus.MustNewConstMetric(lagDesc, prometheus.GaugeValue, float64(*pp.Lag), labels...)
				}
				ch <- prometheus.MustNewConstMetric(pendingDesc, prometheus.GaugeValue, float64(pp.Pending), labels...)
				age := 0.0
				if pp.OldestPendingAgeMS != nil {
					age = float64(*pp.OldestPendingAgeMS) / 1000
				}
				ch <- prometheus.MustNewConstMetric(oldestDesc, prometheus.GaugeValue, age, labels...)
				q := 0.0
				if pp.Quarantine != nil {
					q = 1
				}
				ch <- prometheus.MustNewConstMetric(quarantinedDesc, prometheus.GaugeValue, q, labels...)
			}
		}
	}
}

// refresh reads the reports of the streams; on a failure it keeps none and
// counts an error. Called with g.mu held.
func (g *gatherer) refresh() {
	ctx, cancel := context.WithTimeout(context.Background(), gatherTimeout)
	defer cancel()
	g.at = time.Now()
	g.reports = g.reports[:0]
	seen := map[string]bool{}
	for _, name := range g.streams() {
		if seen[name] {
			continue
		}
		seen[name] = true
		r, err := g.in.Stream(ctx, name)
		if errors.Is(err, inspect.ErrUnknownStream) {
			continue // not registered yet
		}
		if err != nil {
			g.errors++
			g.reports = nil
			return
		}
		g.reports = append(g.reports, r)
	}
}
