package inspect

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/leatdev/leat/internal/core"
	"github.com/leatdev/leat/internal/lease"
	"github.com/leatdev/leat/internal/rdb"
	"github.com/redis/go-redis/v9"
)

// ErrUnknownStream is returned by Stream for a stream the registry does
// not hold.
var ErrUnknownStream = core.ErrUnknownStream

// RetentionWarning is the fraction of a partition's retention size that a
// processor's lag may reach before it is reported as at risk: past the
// size, XADD MAXLEN ~ trims entries the processor has not read.
const RetentionWarning = 0.8

// defaultLockExpiry is the heartbeat TTL assumed for a processor whose
// definition does not record one (the executor's default).
const defaultLockExpiry = 10 * time.Second

// Inspector reads the state of one app from Redis. It never writes.
type Inspector struct {
	c     redis.UniversalClient
	k     rdb.KeySpace
	app   string
	alive time.Duration // TaskWorkerAlive; shorter in tests
}

// New returns an inspector of app, whose keys start with prefix ("" for
// the default), over c (which it never closes).
func New(c redis.UniversalClient, prefix, app string) *Inspector {
	return &Inspector{c: c, k: rdb.NewKeySpace(prefix, app), app: app, alive: TaskWorkerAlive}
}

// processorDef is what the processor registry records (app.ProcessorDefinition).
type processorDef struct {
	Stream     string          `json:"stream"`
	Processor  string          `json:"processor"`
	LockExpiry time.Duration   `json:"lock_expiry"`
	Tables     []core.TableDef `json:"tables"`
}

// registry is the app snapshot with its definitions decoded.
type registry struct {
	snap    rdb.AppSnapshot
	streams map[string]core.Definition
	procs   map[string][]processorDef // by stream, sorted by name
}

func (i *Inspector) registry(ctx context.Context) (*registry, error) {
	snap, err := rdb.App(ctx, i.c, i.k)
	if err != nil {
		return nil, err
	}
	r := &registry{snap: snap, streams: map[string]core.Definition{}, procs: map[string][]processorDef{}}
	for name, s := range snap.Streams {
		var d core.Definition
		if err := json.Unmarshal([]byte(s), &d); err != nil {
			return nil, fmt.Errorf("registry entry of stream %q is not valid JSON: %w", name, err)
		}
		d.Name = name
		r.streams[name] = d
	}
	for full, s := range snap.Processors {
		var d processorDef
		_ = json.Unmarshal([]byte(s), &d) // only the lock expiry is optional
		d.Stream, d.Processor, _ = strings.Cut(full, "/")
		r.procs[d.Stream] = append(r.procs[d.Stream], d)
	}
	for _, ps := range r.procs {
		slices.SortFunc(ps, func(a, b processorDef) int { return cmp.Compare(a.Processor, b.Processor) })
	}
	return r, nil
}

// Stream reads the state of stream name: each partition, and what each
// processor of the stream registered in Redis has done with it. It fails
// with an error matching ErrUnknownStream when the registry does not hold
// the stream.
//
// Cost: one round trip for the registry, one pipelined round trip of XINFO
// STREAM and XINFO GROUPS per partition, and per processor one of
// XPENDING (summary form) and GET of the lock per partition, and one of
// ZRANGE, GET and HGETALL of its group state.
func (i *Inspector) Stream(ctx context.Context, name string) (*StreamReport, error) {
	reg, err := i.registry(ctx)
	if err != nil {
		return nil, err
	}
	def, ok := reg.streams[name]
	if !ok {
		known := slices.Sorted(maps.Keys(reg.streams))
		if len(known) == 0 {
			return nil, fmt.Errorf("%w %q: app %q has no stream in its registry", ErrUnknownStream, name, i.app)
		}
		return nil, fmt.Errorf("%w %q: app %q has %s", ErrUnknownStream, name, i.app, strings.Join(known, ", "))
	}
	r, _, err := i.stream(ctx, reg, def)
	return r, err
}

func (i *Inspector) partitionKeys(stream string, n int) []string {
	out := make([]string, n)
	for p := range out {
		out[p] = i.k.Partition(stream, p)
	}
	return out
}

// stream builds the report of stream def, and returns the group state of
// each of its processors, in the order of the report.
func (i *Inspector) stream(ctx context.Context, reg *registry, def core.Definition) (*StreamReport, []rdb.GroupSnapshot, error) {
	now := reg.snap.Now
	pkeys := i.partitionKeys(def.Name, def.Partitions)
	states, err := rdb.PartitionStates(ctx, i.c, pkeys)
	if err != nil {
		return nil, nil, err
	}
	r := &StreamReport{
		App: i.app, Stream: def.Name, Time: now.UTC(), Size: def.Size, Codec: def.Codec, KeyField: def.KeyField,
		Partitions: make([]Partition, def.Partitions), Processors: []ProcessorReport{}, Warnings: []string{},
	}
	for p, s := range states {
		r.Partitions[p] = Partition{Partition: p, Length: s.Length, EntriesAdded: s.Added, FirstID: s.FirstID, LastID: s.LastID}
		r.Length += s.Length
	}
	var snaps []rdb.GroupSnapshot
	for _, pd := range reg.procs[def.Name] {
		pr, snap, err := i.processor(ctx, def, pd, states, now)
		if err != nil {
			return nil, nil, err
		}
		snaps = append(snaps, snap)
		for _, pp := range pr.Partitions {
			if pp.RetentionRisk {
				r.Warnings = append(r.Warnings, fmt.Sprintf(
					"processor %s lags %d entries on partition %d of %s, %d%% of its retention size %d: entries may be trimmed before they are processed",
					pd.Processor, *pp.Lag, pp.Partition, def.Name, *pp.Lag*100/max(def.Size, 1), def.Size))
			}
			if q := pp.Quarantine; q != nil {
				r.Warnings = append(r.Warnings, fmt.Sprintf("processor %s: partition %d of %s stopped by the %s policy: %s",
					pd.Processor, pp.Partition, def.Name, q.Policy, q.Error))
			}
		}
		r.Processors = append(r.Processors, *pr)
	}
	dead, err := rdb.DeadLengths(ctx, i.c, i.deadKeys(def.Name, reg.procs[def.Name]))
	if err != nil {
		return nil, nil, err
	}
	for k, n := range dead {
		r.Processors[k].Dead = n
	}
	return r, snaps, nil
}

// processor builds the report of processor pd from the partition states.
func (i *Inspector) processor(ctx context.Context, def core.Definition, pd processorDef, states []rdb.PartitionState, now time.Time) (*ProcessorReport, rdb.GroupSnapshot, error) {
	var snap rdb.GroupSnapshot
	pkeys := i.partitionKeys(def.Name, def.Partitions)
	pending, err := rdb.PendingSummaries(ctx, i.c, pkeys, pd.Processor)
	if err != nil {
		return nil, snap, err
	}
	lockKeys := make([]string, def.Partitions)
	for p := range lockKeys {
		lockKeys[p] = i.k.Lock(def.Name, pd.Processor, p)
	}
	locks, err := rdb.Values(ctx, i.c, lockKeys)
	if err != nil {
		return nil, snap, err
	}
	snap, err = rdb.NewGroup(i.c, i.k, def.Name, pd.Processor).Snapshot(ctx)
	if err != nil {
		return nil, snap, err
	}
	pr := &ProcessorReport{Processor: pd.Processor, Partitions: make([]ProcessorPartition, def.Partitions)}
	for _, t := range pd.Tables {
		pr.Tables = append(pr.Tables, Table{Name: t.Name, Codec: t.Codec})
	}
	for _, deadline := range snap.Members {
		if !deadline.Before(now) {
			pr.Executors++
		}
	}
	for p := range pr.Partitions {
		pp := ProcessorPartition{Partition: p, Owner: owner(locks[p])}
		st := states[p]
		g, ok := st.Group(pd.Processor)
		switch {
		case !st.Exists:
			pp.Lag = ptr(int64(0)) // nothing was ever sent
		case ok:
			pp.Consumers, pp.LastDeliveredID = g.Consumers, g.LastDeliveredID
			if g.LagOK {
				pp.Lag = ptr(g.Lag)
			} else if g.EntriesReadOK {
				pp.Lag = ptr(max(st.Added-g.EntriesRead, 0))
			}
		}
		pp.Pending = pending[p].Count
		if id := pending[p].OldestID; id != "" && pp.Pending > 0 {
			pp.OldestPendingID = id
			if ms, ok := idMillis(id); ok {
				pp.OldestPendingAgeMS = ptr(max(now.UnixMilli()-ms, 0))
			}
		}
		if b, ok := snap.Reports[p]; ok {
			var q Quarantine
			if json.Unmarshal(b, &q) == nil {
				pp.Quarantine = &q
				pr.Quarantined++
			}
		}
		if pp.Lag != nil && def.Size > 0 && float64(*pp.Lag) >= RetentionWarning*float64(def.Size) {
			pp.RetentionRisk = true
		}
		if pp.Owner != nil {
			pr.Owned++
		}
		if pp.Lag != nil {
			pr.Lag = ptr(derefOr(pr.Lag) + *pp.Lag)
		}
		pr.Pending += pp.Pending
		pr.Partitions[p] = pp
	}
	return pr, snap, nil
}

// Overview reads the state of the app: its streams, its processors summed
// over their partitions, its leader, its workers with what they run, and
// its task queues.
//
// Cost: the registry's round trip, then per stream one pipelined round trip
// of XINFO STREAM and XINFO GROUPS per partition, and per processor the
// reads of Stream: O(partitions) commands in all, pipelined; then the reads
// of Queues for every task queue: two round trips, O(queues × levels)
// commands.
func (i *Inspector) Overview(ctx context.Context) (*Overview, error) {
	reg, err := i.registry(ctx)
	if err != nil {
		return nil, err
	}
	now := reg.snap.Now
	o := &Overview{App: i.app, Time: now.UTC(), Streams: []StreamSummary{}, Processors: []ProcessorSummary{},
		Workers: []Worker{}, Warnings: []string{}}
	if reg.snap.Leader != "" {
		o.Leader = &Leader{Worker: lease.Holder(reg.snap.Leader), Term: reg.snap.Term}
	}
	workers := map[string]*Worker{}
	for _, name := range slices.Sorted(maps.Keys(reg.streams)) {
		def := reg.streams[name]
		sr, snaps, err := i.stream(ctx, reg, def)
		if err != nil {
			return nil, err
		}
		ss := StreamSummary{Name: name, Partitions: def.Partitions, Size: def.Size, Codec: def.Codec,
			KeyField: def.KeyField, Length: sr.Length, Processors: []string{}}
		o.Warnings = append(o.Warnings, sr.Warnings...)
		for k, pr := range sr.Processors {
			ss.Processors = append(ss.Processors, pr.Processor)
			o.Processors = append(o.Processors, ProcessorSummary{
				Stream: name, Processor: pr.Processor, Executors: pr.Executors, Owned: pr.Owned,
				Partitions: def.Partitions, Lag: pr.Lag, Pending: pr.Pending, Quarantined: pr.Quarantined, Dead: pr.Dead,
			})
			addExecutors(workers, reg.procs[name][k], pr, snaps[k], now)
		}
		o.Streams = append(o.Streams, ss)
	}
	defs, err := queueDefs(reg.snap)
	if err != nil {
		return nil, err
	}
	qs, err := i.queues(ctx, defs, now)
	if err != nil {
		return nil, err
	}
	o.Queues = make([]QueueSummary, len(qs))
	for k, q := range qs {
		o.Queues[k] = q.QueueSummary
		for _, tw := range q.Workers {
			if workers[tw.Worker] == nil {
				workers[tw.Worker] = &Worker{ID: tw.Worker}
			}
			workers[tw.Worker].Queues = append(workers[tw.Worker].Queues, tw)
		}
	}
	for _, id := range slices.Sorted(maps.Keys(workers)) {
		w := workers[id]
		if w.Executors == nil {
			w.Executors = []Executor{}
		}
		if w.Queues == nil {
			w.Queues = []TaskWorker{}
		}
		w.Leader = o.Leader != nil && id != "" && o.Leader.Worker == id
		slices.SortFunc(w.Executors, func(a, b Executor) int {
			return cmp.Or(cmp.Compare(a.Stream, b.Stream), cmp.Compare(a.Processor, b.Processor), cmp.Compare(a.ID, b.ID))
		})
		o.Workers = append(o.Workers, *w)
	}
	if o.Leader != nil && workers[o.Leader.Worker] == nil {
		// The leader runs no processor and no task queue: list it all the
		// same.
		o.Workers = append(o.Workers, Worker{ID: o.Leader.Worker, Leader: true, Executors: []Executor{}, Queues: []TaskWorker{}})
	}
	return o, nil
}

// addExecutors adds the members of processor pd to workers, each under the
// worker its lock values name.
func addExecutors(workers map[string]*Worker, pd processorDef, pr ProcessorReport, snap rdb.GroupSnapshot, now time.Time) {
	expiry := cmp.Or(pd.LockExpiry, defaultLockExpiry)
	held := map[string][]int{}
	workerOf := map[string]string{}
	for _, pp := range pr.Partitions {
		if pp.Owner != nil {
			held[pp.Owner.Executor] = append(held[pp.Owner.Executor], pp.Partition)
			workerOf[pp.Owner.Executor] = pp.Owner.Worker
		}
	}
	ids := slices.Collect(maps.Keys(snap.Members))
	for id := range held {
		if _, ok := snap.Members[id]; !ok {
			ids = append(ids, id) // holds a lock but left the membership (stopping)
		}
	}
	for _, id := range ids {
		e := Executor{ID: id, Stream: pd.Stream, Processor: pd.Processor, Partitions: held[id]}
		if e.Partitions == nil {
			e.Partitions = []int{}
		}
		if deadline, ok := snap.Members[id]; ok {
			e.Alive = !deadline.Before(now)
			e.HeartbeatAgeMS = max(now.Sub(deadline.Add(-expiry)).Milliseconds(), 0)
		}
		w := workerOf[id]
		if workers[w] == nil {
			workers[w] = &Worker{ID: w}
		}
		workers[w].Executors = append(workers[w].Executors, e)
	}
}

// owner reads a lock value: "TOKEN EXECUTOR WORKER" (the worker may be
// absent); nil for no lock.
func owner(value string) *Owner {
	if value == "" {
		return nil
	}
	exec, worker, _ := strings.Cut(lease.Holder(value), " ")
	return &Owner{Executor: exec, Worker: worker}
}

// idMillis returns the time part of an entry ID.
func idMillis(id string) (int64, bool) {
	ms, _, _ := strings.Cut(id, "-")
	n, err := strconv.ParseInt(ms, 10, 64)
	return n, err == nil
}

func ptr[T any](v T) *T { return &v }

func derefOr(p *int64) int64 {
	if p == nil {
		return 0
	}
	return *p
}
