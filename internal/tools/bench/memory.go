package bench

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"time"

	"github.com/leatdev/leat/app"
	"github.com/leatdev/leat/stream"
	"github.com/redis/go-redis/v9"
)

// BenchmarkMemory is the name of the memory benchmark.
const BenchmarkMemory = "memory"

// Variants, figures and settings of the memory benchmark.
const (
	VariantRSS         = "leat worker"
	VariantRawKeyed    = "raw+key" // raw XADD of the entry's key and data
	FigureRSSBase      = "process RSS before worker MiB"
	FigureRSSIdle      = "RSS idle MiB"
	FigureRSSDrain     = "RSS draining peak MiB"
	FigureEntryBytes   = "Redis bytes/entry"
	memPayload         = 100    // bytes of the payload of the per-entry measurement
	memEntries         = 10_000 // entries of the per-entry measurement, at most
	memSample          = 10 * time.Millisecond
	memIdleSettle      = time.Second // an idle worker runs this long before its RSS is read
	memStreamName      = "memory"
	memDrainStreamName = "drain"
	memDrainChunk      = 10_000
	memKey             = "customer-1" // the partition key of every entry of the per-entry measurement
)

// Memory measures, per round: the resident memory (RSS) of this process
// before a worker starts, while a worker with one processor over a stream
// of cfg.Wide partitions is idle, and its peak while the worker drains
// cfg.Events records; and the Redis memory per entry (MEMORY USAGE of a
// one-partition stream divided by its entries) of events whose encoded
// record is 100 bytes, sent by leat's Send (as "leat"), against raw XADD of
// the same 100 bytes as the only field (as "raw") and of the entry's key and
// the 100 bytes (as "raw+key": what a leat entry must carry). RSS needs
// Linux's /proc. Every key it wrote is deleted before it returns.
func Memory(ctx context.Context, client redis.UniversalClient, cfg Config) (Result, error) {
	if _, err := rss(); err != nil {
		return Result{}, err
	}
	return run(ctx, client, cfg, BenchmarkMemory, func(cfg Config, sp Space) ([]Workload, []Pair, error) {
		n := min(cfg.Events, memEntries)
		return []Workload{
			{Name: VariantRSS, Figures: []string{FigureRSSBase, FigureRSSIdle, FigureRSSDrain}, Run: func(ctx context.Context) ([]float64, error) {
				return memoryRSS(ctx, sp, cfg)
			}},
			{Name: VariantLeat, Figures: []string{FigureEntryBytes}, Run: func(ctx context.Context) ([]float64, error) {
				return entryBytesLeat(ctx, sp, cfg, n)
			}},
			{Name: VariantRaw, Figures: []string{FigureEntryBytes}, Run: func(ctx context.Context) ([]float64, error) {
				return entryBytesRaw(ctx, sp, n, false)
			}},
			{Name: VariantRawKeyed, Figures: []string{FigureEntryBytes}, Run: func(ctx context.Context) ([]float64, error) {
				return entryBytesRaw(ctx, sp, n, true)
			}},
		}, []Pair{{VariantLeat, VariantRaw}, {VariantLeat, VariantRawKeyed}}, nil
	})
}

// rss returns the resident set size of this process in bytes.
func rss() (float64, error) {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0, fmt.Errorf("bench: RSS needs Linux /proc: %w", err)
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			kb, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 64)
			if err != nil {
				return 0, fmt.Errorf("bench: VmRSS %q: %w", v, err)
			}
			return kb * 1024, nil
		}
	}
	return 0, errors.New("bench: no VmRSS in /proc/self/status")
}

// mib converts bytes to MiB.
func mib(b float64) float64 { return b / (1 << 20) }

// memoryRSS runs an idle worker, then a draining one, and returns the
// process RSS before either, the idle worker's and the draining one's
// peak, in MiB.
func memoryRSS(ctx context.Context, sp Space, cfg Config) ([]float64, error) {
	runtime.GC()
	debug.FreeOSMemory()
	base, err := rss()
	if err != nil {
		return nil, err
	}
	idle, err := idleWorker(ctx, sp, cfg, func(ctx context.Context) (float64, error) {
		if err := sleep(ctx, memIdleSettle); err != nil {
			return 0, err
		}
		return rss()
	})
	if err != nil {
		return nil, err
	}
	if err := sp.Clean(ctx); err != nil {
		return nil, err
	}
	peak, err := drainingRSS(ctx, sp, cfg)
	if err != nil {
		return nil, err
	}
	return []float64{mib(base), mib(idle), mib(peak)}, nil
}

// sleep waits d or until ctx ends.
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// idleWorker runs a worker with one processor over a stream of cfg.Wide
// partitions on its own client (named so that CLIENT LIST finds its
// connections), sends one event per partition and waits until the
// processor saw them all (so every partition is owned and read), then calls
// observe and returns its value after stopping the worker.
func idleWorker(ctx context.Context, sp Space, cfg Config, observe func(ctx context.Context) (float64, error)) (float64, error) {
	wc, err := sp.namedClient(idleClientName(sp))
	if err != nil {
		return 0, err
	}
	defer wc.Close()
	a, err := app.New(app.Config{Name: appName, Client: wc, KeyPrefix: sp.prefix, Partitions: cfg.Wide, Logger: cfg.Logger})
	if err != nil {
		return 0, err
	}
	defer a.Close()
	s, err := stream.Declare[latRecord](a, memStreamName, stream.KeyField("k"))
	if err != nil {
		return 0, err
	}
	lat := newLatencies(1)
	if err := app.Process(a, s, group, func(_ context.Context, events *stream.Events[latRecord]) error {
		for e := range events.All() {
			lat.add(e.Partition, 0, time.Now())
		}
		return nil
	}); err != nil {
		return 0, err
	}
	wctx, stop := context.WithCancel(ctx)
	defer stop()
	worker := spawn(func() error { return a.Run(wctx) })
	defer func() { stop(); worker.wait() }()
	kp, err := keysPerPartition(cfg.Wide)
	if err != nil {
		return 0, err
	}
	wcfg := cfg
	wcfg.Partitions = cfg.Wide
	// The warm-up sends through an app of its own, on the benchmark's
	// client: the worker's client holds what the worker opened, not the
	// senders' connections.
	sender, err := sp.NewApp(wcfg)
	if err != nil {
		return 0, err
	}
	defer sender.Close()
	ss, err := stream.Declare[latRecord](sender, memStreamName, stream.KeyField("k"))
	if err != nil {
		return 0, err
	}
	if err := warmUp(ctx, wcfg, kp, lat, worker, func(ctx context.Context, k string) error {
		_, err := ss.Send(ctx, latRecord{Key: k})
		return err
	}); err != nil {
		return 0, err
	}
	v, err := observe(ctx)
	if err != nil {
		return 0, err
	}
	stop()
	if err := worker.wait(); err != nil {
		return 0, fmt.Errorf("worker: %w", err)
	}
	return v, nil
}

// drainingRSS fills a stream of cfg.Wide partitions with cfg.Events
// records, collects the garbage of filling, then starts a worker and
// returns the largest RSS sampled every 10ms until it processed them all.
func drainingRSS(ctx context.Context, sp Space, cfg Config) (float64, error) {
	a, err := sp.NewApp(cfg)
	if err != nil {
		return 0, err
	}
	defer a.Close()
	s, err := stream.Declare[record](a, memDrainStreamName, stream.KeyField("customer"), stream.Partitions(cfg.Wide), stream.Size(int64(cfg.Events)))
	if err != nil {
		return 0, err
	}
	for i := 0; i < cfg.Events; i += memDrainChunk {
		recs := records(min(memDrainChunk, cfg.Events-i), cfg.PayloadBytes)
		if _, err := s.SendMany(ctx, recs); err != nil {
			return 0, fmt.Errorf("fill stream: %w", err)
		}
	}
	seen, err := countTo(a, s, cfg.Events)
	if err != nil {
		return 0, err
	}
	runtime.GC()
	debug.FreeOSMemory()
	wctx, stop := context.WithCancel(ctx)
	defer stop()
	worker := spawn(func() error { return a.Run(wctx) })
	defer func() { stop(); worker.wait() }()
	t := time.NewTicker(memSample)
	defer t.Stop()
	var peak float64
	for {
		v, err := rss()
		if err != nil {
			return 0, err
		}
		peak = max(peak, v)
		select {
		case <-seen.all:
			return peak, nil
		case <-worker.done:
			return 0, fmt.Errorf("%w: %v", seen.stopped(), worker.err)
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-t.C:
		}
	}
}

// memRecord is a payload whose msgpack encoding is 100 bytes: a bin 8
// header (2 bytes) and 98 bytes.
type memRecord = []byte

// memData returns the encoded record of the per-entry measurement and the
// record itself.
func memData() ([]byte, memRecord, error) {
	rec := bytes.Repeat([]byte{'x'}, memPayload-2)
	data, err := stream.MsgPack.Marshal(&rec)
	if err != nil {
		return nil, nil, err
	}
	if len(data) != memPayload {
		return nil, nil, fmt.Errorf("bench: encoded payload is %d bytes, want %d", len(data), memPayload)
	}
	return data, rec, nil
}

// entryBytesLeat sends n records of 100 encoded bytes with SendMany to a
// stream of one partition, each with the key "customer-1", and returns its MEMORY USAGE
// divided by n.
func entryBytesLeat(ctx context.Context, sp Space, cfg Config, n int) ([]float64, error) {
	_, rec, err := memData()
	if err != nil {
		return nil, err
	}
	a, err := sp.NewApp(cfg)
	if err != nil {
		return nil, err
	}
	defer a.Close()
	s, err := stream.Declare[memRecord](a, memStreamName, stream.KeyFunc(func(memRecord) string { return memKey }),
		stream.Partitions(1), stream.Size(int64(2*n)))
	if err != nil {
		return nil, err
	}
	recs := make([]memRecord, n)
	for i := range recs {
		recs[i] = rec
	}
	if _, err := s.SendMany(ctx, recs); err != nil {
		return nil, err
	}
	return usagePerEntry(ctx, sp.client, sp.keys().Partition(memStreamName, 0), n)
}

// entryBytesRaw adds n entries whose only field holds the 100 bytes leat
// stores as a record's data, or with keyed a field holding the key leat
// stores before it, and returns the stream's MEMORY USAGE divided by n.
func entryBytesRaw(ctx context.Context, sp Space, n int, keyed bool) ([]float64, error) {
	data, _, err := memData()
	if err != nil {
		return nil, err
	}
	key := sp.prefix + ":raw-memory"
	values := []any{"d", data}
	if keyed {
		key += "-keyed"
		values = []any{"k", memKey, "d", data}
	}
	pipe := sp.client.Pipeline()
	for range n {
		pipe.XAdd(ctx, &redis.XAddArgs{Stream: key, Values: values})
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return nil, err
	}
	return usagePerEntry(ctx, sp.client, key, n)
}

// usagePerEntry returns MEMORY USAGE key SAMPLES 0 (every element counted)
// divided by n.
func usagePerEntry(ctx context.Context, c redis.UniversalClient, key string, n int) ([]float64, error) {
	b, err := c.MemoryUsage(ctx, key, 0).Result()
	if err != nil {
		return nil, fmt.Errorf("MEMORY USAGE %s: %w", key, err)
	}
	return []float64{float64(b) / float64(n)}, nil
}
