package bench

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/leatdev/leat/app"
	"github.com/leatdev/leat/executor"
	"github.com/leatdev/leat/internal/core"
	"github.com/leatdev/leat/stream"
	"github.com/redis/go-redis/v9"
)

// partitionCount is the XREADGROUP COUNT of the raw processing loops: what a
// leat worker buffers per partition by default (executor.PrefetchFor), about
// the most one of its reads takes from a partition.
func partitionCount(cfg Config) int64 {
	return int64(executor.PrefetchFor(cfg.Partitions))
}

// Settings of the processing variants, the same for leat and raw.
const (
	readCount = 100                    // entries per read of the task and latency raw loops: XREADGROUP COUNT
	readBlock = 100 * time.Millisecond // XREADGROUP BLOCK, leat's ReadBlock
	group     = "bench"                // consumer group, leat's processor name
)

// Process measures reading and acknowledging cfg.Events records with a leat
// worker (decoding each), with a raw go-redis XREADGROUP/XACK loop, and with
// the raw loop decoding each record too. Each run gets a stream filled with
// the same records beforehand. See the package documentation. Every key it
// wrote is deleted before it returns.
func Process(ctx context.Context, client redis.UniversalClient, cfg Config) (Result, error) {
	return run(ctx, client, cfg, BenchmarkProcess, func(cfg Config, sp Space) ([]Workload, []Pair, error) {
		return []Workload{LeatProcess(sp, cfg), RawProcess(sp, cfg, false), RawProcess(sp, cfg, true)},
			[]Pair{{VariantLeat, VariantRaw}, {VariantLeat, VariantRawDecode}}, nil
	})
}

// fill returns a new App with the benchmark stream declared and holding
// recs. The partitions are sized so that nothing is trimmed. The caller
// closes the App.
func fill(ctx context.Context, sp Space, cfg Config, recs []record) (*app.App, *stream.Stream[record], error) {
	a, err := sp.NewApp(cfg)
	if err != nil {
		return nil, nil, err
	}
	s, err := stream.Declare[record](a, streamName, stream.KeyField("customer"), stream.Size(int64(len(recs))))
	if err == nil {
		for i := 0; i < len(recs) && err == nil; i += sendChunk {
			_, err = s.SendMany(ctx, recs[i:min(i+sendChunk, len(recs))])
		}
	}
	if err != nil {
		a.Close()
		return nil, nil, fmt.Errorf("fill stream: %w", err)
	}
	return a, s, nil
}

// processLeat fills a stream with recs, then runs a worker with a processor
// that counts events until it has seen all of them, and returns the time
// from starting the worker to the last event. The worker is stopped, and
// has shut down, before it returns.
// count counts the events a benchmark's processor has seen.
type count struct {
	all  chan struct{} // closed when n events were seen
	seen atomic.Int64
	n    int64
}

// stopped is the error of a worker that stopped before seeing n events.
func (c *count) stopped() error {
	return fmt.Errorf("worker stopped after %d of %d events", c.seen.Load(), c.n)
}

// countTo declares a no-op processor of s on a, with opts, counting the
// events it sees up to n.
func countTo(a *app.App, s *stream.Stream[record], n int, opts ...app.ProcessorOption) (*count, error) {
	c := &count{all: make(chan struct{}), n: int64(n)}
	err := app.Process(a, s, group, func(_ context.Context, events *stream.Events[record]) error {
		for range events.All() {
			if c.seen.Add(1) == c.n {
				close(c.all)
			}
		}
		return nil
	}, opts...)
	return c, err
}

func processLeat(ctx context.Context, sp Space, cfg Config, recs []record, span *CPUSpan) (time.Duration, error) {
	a, s, err := fill(ctx, sp, cfg, recs)
	if err != nil {
		return 0, err
	}
	defer a.Close()
	seen, err := countTo(a, s, len(recs), app.ReadBlock(readBlock))
	if err != nil {
		return 0, err
	}

	wctx, stop := context.WithCancel(ctx)
	defer stop()
	if err := span.Start(ctx); err != nil {
		return 0, err
	}
	ran := make(chan error, 1)
	start := time.Now()
	go func() { ran <- a.Run(wctx) }()
	select {
	case <-seen.all:
		elapsed := time.Since(start)
		serr := span.Stop(ctx)
		stop()
		if err := <-ran; err != nil {
			return 0, fmt.Errorf("worker: %w", err)
		}
		return elapsed, serr
	case err := <-ran: // failed, or ctx was cancelled
		if err == nil {
			err = ctx.Err()
		}
		if err == nil {
			err = seen.stopped()
		}
		return 0, fmt.Errorf("worker: %w", err)
	}
}

// processRaw fills a stream with recs, creates a consumer group on every
// partition, then reads and acknowledges every entry with one consumer:
// XREADGROUP over all partitions, then one pipeline of an XACK per
// partition read. With decode, it also decodes each record. It returns how
// long the reading took.
func processRaw(ctx context.Context, sp Space, cfg Config, recs []record, decode bool, span *CPUSpan) (time.Duration, error) {
	a, s, err := fill(ctx, sp, cfg, recs)
	if err != nil {
		return 0, err
	}
	a.Close()
	client := sp.client
	streams := make([]string, 0, 2*cfg.Partitions)
	for p := range cfg.Partitions {
		key := sp.keys().Partition(s.Name(), p)
		if err := client.XGroupCreateMkStream(ctx, key, group, "0").Err(); err != nil {
			return 0, err
		}
		streams = append(streams, key)
	}
	for range cfg.Partitions {
		streams = append(streams, ">")
	}
	args := &redis.XReadGroupArgs{Group: group, Consumer: "c", Streams: streams, Count: partitionCount(cfg), Block: readBlock}

	if err := span.Start(ctx); err != nil {
		return 0, err
	}
	start := time.Now()
	for got := 0; got < len(recs); {
		if err := ctx.Err(); err != nil {
			return 0, err
		}
		res, err := client.XReadGroup(ctx, args).Result()
		if errors.Is(err, redis.Nil) {
			continue // nothing within readBlock
		}
		if err != nil {
			return 0, err
		}
		pipe := client.Pipeline()
		for _, st := range res {
			ids := make([]string, len(st.Messages))
			for i, m := range st.Messages {
				ids[i] = m.ID
				if decode {
					if err := decodeRecord(m); err != nil {
						return 0, err
					}
				}
			}
			got += len(ids)
			pipe.XAck(ctx, st.Stream, group, ids...)
		}
		if _, err := pipe.Exec(ctx); err != nil {
			return 0, err
		}
	}
	d := time.Since(start)
	return d, span.Stop(ctx)
}

// decodeRecord decodes the record of m as a leat processor would.
func decodeRecord(m redis.XMessage) error {
	data, _ := m.Values[core.FieldData].(string)
	var r record
	if err := stream.MsgPack.Unmarshal([]byte(data), &r); err != nil {
		return fmt.Errorf("decode entry %s: %w", m.ID, err)
	}
	return nil
}

// LeatProcess is the leat variant of Process as a workload.
func LeatProcess(sp Space, cfg Config) Workload {
	return TimedEvents(VariantLeat, cfg.Events, sp.client, func(ctx context.Context, span *CPUSpan) (time.Duration, error) {
		return processLeat(ctx, sp, cfg, records(cfg.Events, cfg.PayloadBytes), span)
	})
}

// RawProcess is the raw variant of Process as a workload, decoding each
// record with decode.
func RawProcess(sp Space, cfg Config, decode bool) Workload {
	name := VariantRaw
	if decode {
		name = VariantRawDecode
	}
	return TimedEvents(name, cfg.Events, sp.client, func(ctx context.Context, span *CPUSpan) (time.Duration, error) {
		return processRaw(ctx, sp, cfg, records(cfg.Events, cfg.PayloadBytes), decode, span)
	})
}
