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
// The exporter also implements task.HookTaskRun: it counts the runs of
// tasks by outcome, their handler latency and the attempt at which tasks
// ended. [Exporter.GatherQueues] adds gauges of each task queue's tasks per
// state, the age of its oldest ready task and its throughput, read on
// scrape through package inspect (two pipelined round trips for all the
// queues) and cached like the partition figures.
//
// Labels are stream, processor and partition, or queue, state and outcome:
// their number is bounded by the partitions of the app's streams and its
// task queues (no entry IDs, no task IDs, no executor IDs).
//
// The package never starts an HTTP server: [NewHandler] returns a handler
// serving /metrics, /healthz and /readyz for the caller to mount, as "leat
// worker --metrics-addr" does.
package metrics

import (
	"context"
	"errors"
	"maps"
	"slices"
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

	taskRuns     *prometheus.CounterVec
	taskLatency  *prometheus.HistogramVec
	taskAttempts *prometheus.HistogramVec

	gauges *gatherer
	worker *worker
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
		taskRuns: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "leat_task_runs_total",
			Help: "Task runs whose outcome this worker recorded, by outcome: succeeded, retried, snoozed, failed, dead, cancelled."},
			[]string{"queue", "outcome"}),
		taskLatency: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "leat_task_duration_seconds",
			Help:    "Time a task handler ran, per recorded run.",
			Buckets: prometheus.ExponentialBuckets(0.001, 4, 10)}, []string{"queue"}),
		taskAttempts: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "leat_task_attempts",
			Help:    "Attempt at which a task ended (succeeded, failed, dead or cancelled while it ran).",
			Buckets: []float64{1, 2, 3, 4, 5, 6, 8, 11, 16, 21, 31, 51}}, []string{"queue"}),
		gauges: &gatherer{cacheFor: cfg.CacheFor},
		worker: &worker{},
	}
	for _, c := range x.collectors() {
		if err := cfg.Registry.Register(c); err != nil {
			return nil, err
		}
	}
	return x, nil
}

// collectors returns every collector of the exporter's metrics.
func (x *Exporter) collectors() []prometheus.Collector {
	return []prometheus.Collector{x.processed, x.failed, x.latency, x.batch, x.lockLost, x.rebalances, x.owned,
		x.quarantines, x.trimmed, x.taskRuns, x.taskLatency, x.taskAttempts, x.gauges, x.worker}
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

// GatherQueues makes scrapes report the tasks per state, the age of the
// oldest ready task and the throughput of the task queues that queues
// returns (every queue of the app's registry when it returns none), read
// through in (the same Inspector as Gather's, if both are used). Figures
// are cached for Config.CacheFor; every worker reports the same values:
// aggregate them with max by (queue, ...).
func (x *Exporter) GatherQueues(in *inspect.Inspector, queues func() []string) {
	x.gauges.mu.Lock()
	defer x.gauges.mu.Unlock()
	x.gauges.in, x.gauges.queues, x.gauges.at = in, queues, time.Time{}
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

// OnTaskRun implements task.HookTaskRun.
func (x *Exporter) OnTaskRun(queue, outcome string, attempt int, took time.Duration) {
	x.taskRuns.WithLabelValues(queue, outcome).Inc()
	x.taskLatency.WithLabelValues(queue).Observe(took.Seconds())
	if outcome != "retried" && outcome != "snoozed" { // the task runs again
		x.taskAttempts.WithLabelValues(queue).Observe(float64(attempt))
	}
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
	streams func() []string // nil: no stream figures
	queues  func() []string // nil: no task queue figures
	at      time.Time       // when reports were read; zero: never
	reports []*inspect.StreamReport
	qs      []inspect.QueueReport
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
		"Scrapes whose reads from Redis (lag, pending, task queues) failed.", nil, nil)
	queueTasksDesc = prometheus.NewDesc("leat_task_queue_tasks",
		"Tasks of the queue in each state (the queue's counters, HGETALL).", []string{"queue", "state"}, nil)
	queueReadyAgeDesc = prometheus.NewDesc("leat_task_queue_oldest_ready_age_seconds",
		"Age of the queue's oldest ready entry no worker took yet, over its priority levels; 0 when none.", []string{"queue"}, nil)
	queueDeliveredAgeDesc = prometheus.NewDesc("leat_task_queue_oldest_delivered_age_seconds",
		"Age of the queue's oldest entry delivered to a worker and not acknowledged (XPENDING summary); 0 when none.", []string{"queue"}, nil)
	queueWorkersDesc = prometheus.NewDesc("leat_task_queue_workers",
		"Workers of the queue heard of within the last 5 seconds (inspect.TaskWorkerAlive: a running worker beats every second); 0: nobody runs its tasks.",
		[]string{"queue"}, nil)
	queuePausedDesc = prometheus.NewDesc("leat_task_queue_paused",
		"1 while the queue is paused (task.Queue.Pause: its workers start none of its tasks), else 0.", []string{"queue"}, nil)
	queueRateDesc = prometheus.NewDesc("leat_task_queue_rate_limit_per_second",
		"The queue's rate limit over all workers (set live with task.Queue.SetRate, else its workers' task.Rate) in tasks started per second; 0 when none.",
		[]string{"queue"}, nil)
	queueThroughputDesc = prometheus.NewDesc("leat_task_queue_finished_per_second",
		"Tasks of the queue that reached a final state per second, over the last minute or 5 minutes (window 1m, 5m).",
		[]string{"queue", "window"}, nil)
)

// Describe implements prometheus.Collector.
func (g *gatherer) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{lagDesc, pendingDesc, oldestDesc, quarantinedDesc, lengthDesc, sizeDesc, errorsDesc,
		queueTasksDesc, queueReadyAgeDesc, queueDeliveredAgeDesc, queueWorkersDesc, queuePausedDesc, queueRateDesc, queueThroughputDesc} {
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
	for _, q := range g.qs {
		for _, st := range slices.Sorted(maps.Keys(q.Counts)) {
			ch <- prometheus.MustNewConstMetric(queueTasksDesc, prometheus.GaugeValue, float64(q.Counts[st]), q.Name, st)
		}
		ch <- prometheus.MustNewConstMetric(queueReadyAgeDesc, prometheus.GaugeValue, seconds(q.OldestReadyAgeMS), q.Name)
		ch <- prometheus.MustNewConstMetric(queueDeliveredAgeDesc, prometheus.GaugeValue, seconds(q.OldestDeliveredAgeMS), q.Name)
		alive := 0
		for _, w := range q.Workers {
			if w.Alive {
				alive++
			}
		}
		ch <- prometheus.MustNewConstMetric(queueWorkersDesc, prometheus.GaugeValue, float64(alive), q.Name)
		paused := 0.0
		if q.PausedAt != nil {
			paused = 1
		}
		ch <- prometheus.MustNewConstMetric(queuePausedDesc, prometheus.GaugeValue, paused, q.Name)
		limit := 0.0
		if r := q.Rate; r != nil && r.WindowMS > 0 {
			limit = float64(r.Tasks) * 1000 / float64(r.WindowMS)
		}
		ch <- prometheus.MustNewConstMetric(queueRateDesc, prometheus.GaugeValue, limit, q.Name)
		ch <- prometheus.MustNewConstMetric(queueThroughputDesc, prometheus.GaugeValue, q.Throughput.LastMinute.PerSecond, q.Name, "1m")
		ch <- prometheus.MustNewConstMetric(queueThroughputDesc, prometheus.GaugeValue, q.Throughput.LastFiveMinute.PerSecond, q.Name, "5m")
	}
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

// seconds converts an age in milliseconds, 0 for none.
func seconds(ms *int64) float64 {
	if ms == nil {
		return 0
	}
	return float64(*ms) / 1000
}

// refresh reads the reports of the streams and task queues; on a failure
// it keeps none and counts an error. Called with g.mu held.
func (g *gatherer) refresh() {
	ctx, cancel := context.WithTimeout(context.Background(), gatherTimeout)
	defer cancel()
	g.at = time.Now()
	g.reports, g.qs = g.reports[:0], nil
	if g.queues != nil {
		qs, err := g.in.Queues(ctx, g.queues()...)
		if err != nil {
			g.errors++
			g.reports = nil
			return
		}
		g.qs = qs
	}
	if g.streams == nil {
		return
	}
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
			g.reports, g.qs = nil, nil
			return
		}
		g.reports = append(g.reports, r)
	}
}
