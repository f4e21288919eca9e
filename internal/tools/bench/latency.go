package bench

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/leatdev/leat/app"
	"github.com/leatdev/leat/stream"
	"github.com/redis/go-redis/v9"
)

// BenchmarkLatency is the name of the latency benchmark.
const BenchmarkLatency = "latency"

// Figures of the latency benchmark.
const (
	FigureP50   = "p50 ms"
	FigureP99   = "p99 ms"
	FigureP999  = "p99.9 ms"
	FigureSent  = "sent/s"
	latSenders  = 16                     // goroutines sending, each one event at a time
	latKeys     = 1000                   // distinct partition keys
	latDrainMax = 30 * time.Second       // bound of the wait for the last events
	latWarmWait = 30 * time.Second       // bound of the wait for the consumer to be ready
	latRawBlock = 100 * time.Millisecond // raw consumer's XREADGROUP BLOCK (it returns on the first entry)
)

var latFigures = []string{FigureP50, FigureP99, FigureP999, FigureSent}

// latRecord is the record of the latency stream: its key and when it was
// sent.
type latRecord struct {
	Key  string `msgpack:"k"`
	Sent int64  `msgpack:"t"` // Unix nanoseconds; 0 for a warm-up event
}

// The latency benchmark's variants over cfg.Wide partitions.
const (
	VariantLeatWide = "leat wide"
	VariantRawWide  = "raw wide"
)

// Latency measures how long an event takes from the start of its Send to
// its processor, for events sent at cfg.Rate events/s (over cfg.Latency)
// over cfg.Partitions partitions, each by one unpipelined call from one of
// 16 sending goroutines: leat's Send to a worker's processor against raw
// XADD to a consumer blocked in XREADGROUP on all partitions; then the same
// over cfg.Wide partitions (when that differs), where a wake-up costs both
// sides more (every blocking read covers every partition). Each round
// reports p50, p99 and p99.9 in milliseconds and the rate achieved. Every
// key it wrote is deleted before it returns.
func Latency(ctx context.Context, client redis.UniversalClient, cfg Config) (Result, error) {
	return run(ctx, client, cfg, BenchmarkLatency, func(cfg Config, sp Space) ([]Workload, []Pair, error) {
		ws := latencyPair(sp, cfg, VariantLeat, VariantRaw)
		pairs := []Pair{{VariantLeat, VariantRaw}}
		if cfg.Wide != cfg.Partitions {
			wide := cfg
			wide.Partitions = cfg.Wide
			ws = append(ws, latencyPair(sp, wide, VariantLeatWide, VariantRawWide)...)
			pairs = append(pairs, Pair{VariantLeatWide, VariantRawWide})
		}
		return ws, pairs, nil
	})
}

// latencyPair returns the leat and raw workloads of the latency benchmark
// over cfg.Partitions partitions, named leat and raw.
func latencyPair(sp Space, cfg Config, leat, raw string) []Workload {
	return []Workload{
		{Name: leat, Figures: latFigures, Run: func(ctx context.Context) ([]float64, error) { return latencyLeat(ctx, sp, cfg) }},
		{Name: raw, Figures: latFigures, Run: func(ctx context.Context) ([]float64, error) { return latencyRaw(ctx, sp, cfg) }},
	}
}

// latencies collects latencies from concurrent consumers.
type latencies struct {
	mu   sync.Mutex
	ms   []float64
	seen map[int]bool // partitions that delivered a warm-up event
	done chan struct{}
	want int // timed events expected; done closes when all arrived
}

func newLatencies(want int) *latencies {
	return &latencies{seen: map[int]bool{}, done: make(chan struct{}), want: want, ms: make([]float64, 0, want)}
}

// add records an event of partition p sent at sent (Unix ns; 0: warm-up)
// and received at now.
func (l *latencies) add(p int, sent int64, now time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if sent == 0 {
		l.seen[p] = true
		return
	}
	l.ms = append(l.ms, float64(now.UnixNano()-sent)/1e6)
	if len(l.ms) == l.want {
		close(l.done)
	}
}

func (l *latencies) warm(partitions int) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.seen) == partitions
}

// figures returns p50, p99 and p99.9 and the send rate.
func (l *latencies) figures(sent time.Duration) []float64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	s := slices.Sorted(slices.Values(l.ms))
	return []float64{percentile(s, 0.50), percentile(s, 0.99), percentile(s, 0.999), float64(len(s)) / max(sent.Seconds(), 1e-9)}
}

// wait waits until the consumer saw all timed events, or fails.
func (l *latencies) wait(ctx context.Context, consumer *job) error {
	t := time.NewTimer(latDrainMax)
	defer t.Stop()
	select {
	case <-l.done:
		return nil
	case <-consumer.done:
		return fmt.Errorf("consumer stopped: %v", consumer.err)
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		l.mu.Lock()
		defer l.mu.Unlock()
		return fmt.Errorf("%d of %d events arrived within %s", len(l.ms), l.want, latDrainMax)
	}
}

// keysPerPartition returns, for each of n partitions, the keys among
// latKeys candidates that route to it, so that warm-up can reach each.
func keysPerPartition(n int) ([][]string, error) {
	out := make([][]string, n)
	for i := 0; ; i++ {
		k := "k" + strconv.Itoa(i)
		p := stream.PartitionOf([]byte(k), n)
		out[p] = append(out[p], k)
		if i >= latKeys && !slices.ContainsFunc(out, func(ks []string) bool { return len(ks) == 0 }) {
			return out, nil
		}
		if i > 1_000_000 {
			return nil, errors.New("no key for some partition")
		}
	}
}

// pace sends the timed events: event i at start + i/rate, by latSenders
// goroutines, each calling send once per event, and returns how long
// sending took.
func pace(ctx context.Context, cfg Config, n int, send func(ctx context.Context, i int, sent time.Time) error) (time.Duration, error) {
	interval := time.Second / time.Duration(cfg.Rate)
	start := time.Now()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	errs := make(chan error, latSenders)
	for g := range latSenders {
		go func() {
			t := time.NewTimer(0)
			defer t.Stop()
			for i := g; i < n; i += latSenders {
				if d := time.Until(start.Add(time.Duration(i) * interval)); d > 0 {
					t.Reset(d)
					select {
					case <-t.C:
					case <-ctx.Done():
						errs <- ctx.Err()
						return
					}
				}
				if err := send(ctx, i, time.Now()); err != nil {
					cancel()
					errs <- err
					return
				}
			}
			errs <- nil
		}()
	}
	var first error
	for range latSenders {
		if err := <-errs; err != nil && first == nil {
			first = err
		}
	}
	return time.Since(start), first
}

// latEvents is the number of timed events of a round.
func latEvents(cfg Config) int { return max(1, int(float64(cfg.Rate)*cfg.Latency.Seconds())) }

// latencyLeat runs a worker whose processor records each event's latency,
// warms it up with an event per partition, then sends the timed events
// with Send.
func latencyLeat(ctx context.Context, sp Space, cfg Config) ([]float64, error) {
	a, err := sp.NewApp(cfg)
	if err != nil {
		return nil, err
	}
	defer a.Close()
	s, err := stream.Declare[latRecord](a, "latency", stream.KeyField("k"))
	if err != nil {
		return nil, err
	}
	n := latEvents(cfg)
	lat := newLatencies(n)
	err = app.Process(a, s, group, func(_ context.Context, events *stream.Events[latRecord]) error {
		for e := range events.All() {
			lat.add(e.Partition, e.Record.Sent, time.Now())
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	wctx, stop := context.WithCancel(ctx)
	defer stop()
	ran := spawn(func() error { return a.Run(wctx) })
	defer func() { stop(); ran.wait() }()

	kp, err := keysPerPartition(cfg.Partitions)
	if err != nil {
		return nil, err
	}
	send := func(ctx context.Context, i int, sent time.Time) error {
		_, err := s.Send(ctx, latRecord{Key: kp[i%cfg.Partitions][(i/cfg.Partitions)%len(kp[i%cfg.Partitions])], Sent: sent.UnixNano()})
		return err
	}
	if err := warmUp(ctx, cfg, kp, lat, ran, func(ctx context.Context, k string) error {
		_, err := s.Send(ctx, latRecord{Key: k})
		return err
	}); err != nil {
		return nil, err
	}
	d, err := pace(ctx, cfg, n, send)
	if err != nil {
		return nil, err
	}
	if err := lat.wait(ctx, ran); err != nil {
		return nil, err
	}
	return lat.figures(d), nil
}

// warmUp sends one warm-up event per partition until the consumer has seen
// one from every partition.
func warmUp(ctx context.Context, cfg Config, kp [][]string, lat *latencies, consumer *job, send func(context.Context, string) error) error {
	deadline := time.Now().Add(latWarmWait)
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for !lat.warm(cfg.Partitions) {
		for p := range cfg.Partitions {
			if err := send(ctx, kp[p][0]); err != nil {
				return err
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("consumer not reading every partition after %s", latWarmWait)
		}
		select {
		case <-tick.C:
		case <-consumer.done:
			return fmt.Errorf("consumer stopped: %v", consumer.err)
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// latencyRaw runs one consumer blocked in XREADGROUP over all partitions,
// which records each entry's latency and acknowledges each reply with a
// pipeline of XACKs, and sends the timed events with one XADD each, in
// leat's partitions.
func latencyRaw(ctx context.Context, sp Space, cfg Config) ([]float64, error) {
	c := sp.client
	ks := sp.keys()
	streams := make([]string, 0, 2*cfg.Partitions)
	for p := range cfg.Partitions {
		key := ks.Partition("latency", p)
		if err := c.XGroupCreateMkStream(ctx, key, group, "$").Err(); err != nil {
			return nil, err
		}
		streams = append(streams, key)
	}
	part := map[string]int{}
	for p, k := range streams {
		part[k] = p
	}
	for range cfg.Partitions {
		streams = append(streams, ">")
	}
	n := latEvents(cfg)
	lat := newLatencies(n)
	cctx, stop := context.WithCancel(ctx)
	defer stop()
	ran := spawn(func() error {
		args := &redis.XReadGroupArgs{Group: group, Consumer: "c", Streams: streams, Count: readCount, Block: latRawBlock}
		for cctx.Err() == nil {
			res, err := c.XReadGroup(cctx, args).Result()
			if errors.Is(err, redis.Nil) {
				continue
			}
			if err != nil {
				if cctx.Err() != nil {
					return nil
				}
				return err
			}
			now := time.Now()
			pipe := c.Pipeline()
			for _, st := range res {
				ids := make([]string, len(st.Messages))
				for i, m := range st.Messages {
					ids[i] = m.ID
					sent, _ := strconv.ParseInt(fmt.Sprint(m.Values["t"]), 10, 64)
					lat.add(part[st.Stream], sent, now)
				}
				pipe.XAck(cctx, st.Stream, group, ids...)
			}
			if _, err := pipe.Exec(cctx); err != nil && cctx.Err() == nil {
				return err
			}
		}
		return nil
	})
	defer func() { stop(); ran.wait() }()

	kp, err := keysPerPartition(cfg.Partitions)
	if err != nil {
		return nil, err
	}
	xadd := func(ctx context.Context, key string, sent int64) error {
		p := stream.PartitionOf([]byte(key), cfg.Partitions)
		return c.XAdd(ctx, &redis.XAddArgs{Stream: streams[p], MaxLen: stream.DefaultSize, Approx: true, Values: []any{"k", key, "t", sent}}).Err()
	}
	if err := warmUp(ctx, cfg, kp, lat, ran, func(ctx context.Context, k string) error { return xadd(ctx, k, 0) }); err != nil {
		return nil, err
	}
	d, err := pace(ctx, cfg, n, func(ctx context.Context, i int, sent time.Time) error {
		return xadd(ctx, kp[i%cfg.Partitions][(i/cfg.Partitions)%len(kp[i%cfg.Partitions])], sent.UnixNano())
	})
	if err != nil {
		return nil, err
	}
	if err := lat.wait(ctx, ran); err != nil {
		return nil, err
	}
	return lat.figures(d), nil
}
