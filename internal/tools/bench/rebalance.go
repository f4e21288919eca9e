package bench

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/leatdev/leat/app"
	"github.com/leatdev/leat/stream"
	"github.com/redis/go-redis/v9"
)

// BenchmarkRebalance is the name of the rebalance benchmark.
const BenchmarkRebalance = "rebalance"

// Variants and figures of the rebalance benchmark.
const (
	VariantJoin            = "join"
	VariantStop            = "graceful stop"
	FigureMoved            = "partitions moved"
	FigureMovedGap         = "moved: max gap ms"
	FigureMovedGapMed      = "moved: median of max gaps ms"
	FigureUnmovedGap       = "unmoved: max gap ms"
	rebTick                = 5 * time.Millisecond   // the producer sends one event per partition per tick
	rebStable              = time.Second            // no owner change for this long: settled
	rebSettleMax           = 2 * time.Minute        // bound of the wait to settle
	rebRecent              = 250 * time.Millisecond // every partition processed an event this recently: flowing
	rebStreamName          = "rebalance"
	rebWorkerA, rebWorkerB = "a", "b"
)

var rebFigures = []string{FigureMoved, FigureMovedGap, FigureMovedGapMed, FigureUnmovedGap}

// Rebalance measures how long partitions pause when they move between
// workers, while a producer sends one event to each of cfg.Partitions
// partitions every 5ms. A round starts worker a, waits until it processes
// every partition, starts worker b (join), waits until the assignment
// settles, then stops b gracefully (stop) and waits again. For each event
// it reports how many partitions moved, the largest gap between two
// processed events of a moved partition (and the median over moved
// partitions of their largest gap), and the largest gap of a partition
// that did not move. Every key it wrote is deleted before it returns.
func Rebalance(ctx context.Context, client redis.UniversalClient, cfg Config) (res Result, err error) {
	cfg, err = cfg.WithDefaults()
	if err != nil {
		return Result{}, err
	}
	if cfg.Partitions < 2 {
		return Result{}, fmt.Errorf("bench %s: partitions %d: want at least 2, so that some can move", BenchmarkRebalance, cfg.Partitions)
	}
	sp, err := NewSpace(client)
	if err != nil {
		return Result{}, err
	}
	defer func() { err = errors.Join(err, sp.Drop(ctx)) }()
	vs := []Variant{{Name: VariantJoin}, {Name: VariantStop}}
	for i := range vs {
		for _, f := range rebFigures {
			vs[i].Figures = append(vs[i].Figures, Figure{Name: f})
		}
	}
	for r := range cfg.Rounds {
		join, stop, err := rebalanceRound(ctx, sp, cfg)
		if err == nil {
			err = sp.Clean(ctx)
		}
		if err != nil {
			return Result{}, fmt.Errorf("round %d: %w", r+1, err)
		}
		for i, vals := range [][]float64{join, stop} {
			for j, v := range vals {
				vs[i].Figures[j].Values = append(vs[i].Figures[j].Values, v)
			}
		}
	}
	return NewResult(BenchmarkRebalance, cfg, vs), nil
}

// processed records, per partition, when each event was processed and by
// which worker.
type processed struct {
	mu         sync.Mutex
	at         [][]time.Time
	by         [][]string
	lastChange time.Time // when a partition last changed worker
}

func newProcessed(partitions int) *processed {
	return &processed{at: make([][]time.Time, partitions), by: make([][]string, partitions)}
}

func (p *processed) add(part int, worker string, now time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if n := len(p.by[part]); n == 0 || p.by[part][n-1] != worker {
		p.lastChange = now
	}
	p.at[part] = append(p.at[part], now)
	p.by[part] = append(p.by[part], worker)
}

// owners returns the worker that processed each partition's last event
// ("" for none yet).
func (p *processed) owners() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]string, len(p.by))
	for i, by := range p.by {
		if len(by) > 0 {
			out[i] = by[len(by)-1]
		}
	}
	return out
}

// settled tells whether the workers named, and only they, own partitions,
// no partition changed worker for rebStable, and every partition
// processed an event within rebRecent.
func (p *processed) settled(now time.Time, workers ...string) bool {
	owners := p.owners()
	p.mu.Lock()
	defer p.mu.Unlock()
	if now.Sub(p.lastChange) < rebStable {
		return false
	}
	for i, o := range owners {
		if !slices.Contains(workers, o) || now.Sub(p.at[i][len(p.at[i])-1]) > rebRecent {
			return false
		}
	}
	for _, w := range workers {
		if !slices.Contains(owners, w) {
			return false
		}
	}
	return true
}

// gaps returns, for each partition, the largest gap between two of its
// processed events from the last one before t on.
func (p *processed) gaps(t time.Time) []time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]time.Duration, len(p.at))
	for i, at := range p.at {
		from, _ := slices.BinarySearchFunc(at, t, func(a, b time.Time) int { return a.Compare(b) })
		for j := max(from, 1); j < len(at); j++ {
			out[i] = max(out[i], at[j].Sub(at[j-1]))
		}
	}
	return out
}

// figures returns the rebalance figures of an event at t, from the owners
// before it to the owners now.
func (p *processed) figures(t time.Time, before []string) []float64 {
	after := p.owners()
	gaps := p.gaps(t)
	var moved, unmoved []float64
	for i, g := range gaps {
		ms := float64(g) / float64(time.Millisecond)
		if before[i] != after[i] {
			moved = append(moved, ms)
		} else {
			unmoved = append(unmoved, ms)
		}
	}
	return []float64{float64(len(moved)), slices.Max(append(moved, 0)), median(moved), slices.Max(append(unmoved, 0))}
}

// rebalanceRound runs one round and returns the figures of the join and of
// the graceful stop.
func rebalanceRound(ctx context.Context, sp Space, cfg Config) (join, stop []float64, err error) {
	rec := newProcessed(cfg.Partitions)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

	producer, err := sp.NewApp(cfg)
	if err != nil {
		return nil, nil, err
	}
	defer producer.Close()
	s, err := stream.Declare[latRecord](producer, rebStreamName, stream.KeyField("k"))
	if err != nil {
		return nil, nil, err
	}
	if err := producer.Register(ctx); err != nil {
		return nil, nil, err
	}
	kp, err := keysPerPartition(cfg.Partitions)
	if err != nil {
		return nil, nil, err
	}
	batch := make([]latRecord, cfg.Partitions)
	for p := range batch {
		batch[p] = latRecord{Key: kp[p][0], Sent: 1}
	}
	pctx, stopProducer := context.WithCancel(ctx)
	prod := spawn(func() error {
		t := time.NewTicker(rebTick)
		defer t.Stop()
		for {
			if _, err := s.SendMany(pctx, batch); err != nil {
				if pctx.Err() != nil {
					return nil
				}
				return err
			}
			select {
			case <-t.C:
			case <-pctx.Done():
				return nil
			}
		}
	})
	defer func() {
		stopProducer()
		err = errors.Join(err, prod.wait())
	}()

	startWorker := func(name string) (context.CancelFunc, *job, error) {
		a, err := sp.NewApp(cfg)
		if err != nil {
			return nil, nil, err
		}
		ws, err := stream.Declare[latRecord](a, rebStreamName, stream.KeyField("k"))
		if err == nil {
			err = app.Process(a, ws, group, func(_ context.Context, events *stream.Events[latRecord]) error {
				for e := range events.All() {
					rec.add(e.Partition, name, time.Now())
				}
				return nil
			})
		}
		if err != nil {
			a.Close()
			return nil, nil, err
		}
		wctx, stop := context.WithCancel(ctx)
		return stop, spawn(func() error { defer a.Close(); return a.Run(wctx) }), nil
	}
	waitSettled := func(running []*job, workers ...string) error {
		deadline := time.Now().Add(rebSettleMax)
		t := time.NewTicker(20 * time.Millisecond)
		defer t.Stop()
		for !rec.settled(time.Now(), workers...) {
			if time.Now().After(deadline) {
				return fmt.Errorf("partitions not settled on workers %v within %s: owners %v", workers, rebSettleMax, rec.owners())
			}
			select {
			case <-t.C:
			case <-prod.done:
				return fmt.Errorf("producer stopped: %v", prod.err)
			case <-ctx.Done():
				return ctx.Err()
			}
			for _, j := range running {
				select {
				case <-j.done:
					return fmt.Errorf("worker stopped: %v", j.err)
				default:
				}
			}
		}
		return nil
	}

	stopA, a, err := startWorker(rebWorkerA)
	if err != nil {
		return nil, nil, err
	}
	defer func() { stopA(); err = errors.Join(err, a.wait()) }()
	if err := waitSettled([]*job{a}, rebWorkerA); err != nil {
		return nil, nil, err
	}

	before, t := rec.owners(), time.Now()
	stopB, b, err := startWorker(rebWorkerB)
	if err != nil {
		return nil, nil, err
	}
	defer func() { stopB(); err = errors.Join(err, b.wait()) }()
	if err := waitSettled([]*job{a, b}, rebWorkerA, rebWorkerB); err != nil {
		return nil, nil, err
	}
	join = rec.figures(t, before)

	before, t = rec.owners(), time.Now()
	stopB()
	if err := b.wait(); err != nil {
		return nil, nil, fmt.Errorf("worker b: %w", err)
	}
	if err := waitSettled([]*job{a}, rebWorkerA); err != nil {
		return nil, nil, err
	}
	return join, rec.figures(t, before), nil
}
