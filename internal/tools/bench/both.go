package bench

import (
	"context"
	"errors"
	"time"

	"github.com/leatdev/leat/app"
	"github.com/leatdev/leat/internal/core"
	"github.com/leatdev/leat/stream"
	"github.com/redis/go-redis/v9"
)

// BenchmarkBoth is the name of the benchmark that produces and consumes at
// once.
const BenchmarkBoth = "produce+consume"

// bothChunk is how many records one send of the producers carries.
const bothChunk = 1000

// Both measures producing and consuming cfg.Events records at the same
// time, from an empty stream until the last record is processed: leat's
// SendMany (chunks of 1,000) beside a worker with a no-op processor,
// against a raw producer that encodes and routes each record and pipelines
// 1,000 XADD MAXLEN ~ per round trip beside one consumer looping over
// XREADGROUP on all partitions, decoding each record and acknowledging each
// reply. Every key it wrote is deleted before it returns.
func Both(ctx context.Context, client redis.UniversalClient, cfg Config) (Result, error) {
	return run(ctx, client, cfg, BenchmarkBoth, func(cfg Config, sp Space) ([]Workload, []Pair, error) {
		recs := records(cfg.Events, cfg.PayloadBytes)
		return []Workload{
			TimedEvents(VariantLeat, cfg.Events, sp.client, func(ctx context.Context, span *CPUSpan) (time.Duration, error) {
				return bothLeat(ctx, sp, cfg, recs, span)
			}),
			TimedEvents(VariantRaw, cfg.Events, sp.client, func(ctx context.Context, span *CPUSpan) (time.Duration, error) {
				return bothRaw(ctx, sp, cfg, recs, span)
			}),
		}, []Pair{{VariantLeat, VariantRaw}}, nil
	})
}

// bothLeat starts a worker and a producer together and returns the time
// until the worker processed the last record.
func bothLeat(ctx context.Context, sp Space, cfg Config, recs []record, span *CPUSpan) (time.Duration, error) {
	a, err := sp.NewApp(cfg)
	if err != nil {
		return 0, err
	}
	defer a.Close()
	s, err := stream.Declare[record](a, streamName, stream.KeyField("customer"), stream.Size(int64(len(recs))))
	if err != nil {
		return 0, err
	}
	seen, err := countTo(a, s, len(recs), app.ReadBlock(readBlock))
	if err != nil {
		return 0, err
	}
	if err := a.Register(ctx); err != nil {
		return 0, err
	}
	wctx, stop := context.WithCancel(ctx)
	defer stop()
	if err := span.Start(ctx); err != nil {
		return 0, err
	}
	start := time.Now()
	worker := spawn(func() error { return a.Run(wctx) })
	producer := spawn(func() error {
		for i := 0; i < len(recs); i += bothChunk {
			if _, err := s.SendMany(wctx, recs[i:min(i+bothChunk, len(recs))]); err != nil {
				return err
			}
		}
		return nil
	})
	select {
	case <-seen.all:
		elapsed := time.Since(start)
		serr := span.Stop(ctx)
		stop()
		return elapsed, errors.Join(serr, producer.wait(), worker.wait())
	case <-worker.done:
		stop()
		err := errors.Join(worker.err, producer.wait(), ctx.Err())
		if err == nil {
			err = seen.stopped()
		}
		return 0, err
	}
}

// bothRaw starts a raw producer and a raw consumer together and returns
// the time until the consumer acknowledged the last record.
func bothRaw(ctx context.Context, sp Space, cfg Config, recs []record, span *CPUSpan) (time.Duration, error) {
	c := sp.client
	ks := sp.keys()
	streams := make([]string, 0, 2*cfg.Partitions)
	for p := range cfg.Partitions {
		key := ks.Partition(streamName, p)
		if err := c.XGroupCreateMkStream(ctx, key, group, "0").Err(); err != nil {
			return 0, err
		}
		streams = append(streams, key)
	}
	for range cfg.Partitions {
		streams = append(streams, ">")
	}
	pctx, stop := context.WithCancel(ctx)
	defer stop()
	if err := span.Start(ctx); err != nil {
		return 0, err
	}
	start := time.Now()
	producer := spawn(func() error {
		for i := 0; i < len(recs); i += bothChunk {
			pipe := c.Pipeline()
			for j := i; j < min(i+bothChunk, len(recs)); j++ {
				data, err := stream.MsgPack.Marshal(&recs[j])
				if err != nil {
					return err
				}
				key := []byte(recs[j].Customer)
				pipe.XAdd(pctx, &redis.XAddArgs{
					Stream: streams[stream.PartitionOf(key, cfg.Partitions)], MaxLen: int64(len(recs)), Approx: true,
					Values: []any{core.FieldKey, key, core.FieldData, data},
				})
			}
			if _, err := pipe.Exec(pctx); err != nil {
				return err
			}
		}
		return nil
	})
	args := &redis.XReadGroupArgs{Group: group, Consumer: "c", Streams: streams, Count: partitionCount(cfg), Block: readBlock}
	err := func() error {
		for got := 0; got < len(recs); {
			if err := ctx.Err(); err != nil {
				return err
			}
			res, err := c.XReadGroup(ctx, args).Result()
			if errors.Is(err, redis.Nil) {
				continue
			}
			if err != nil {
				return err
			}
			pipe := c.Pipeline()
			for _, st := range res {
				ids := make([]string, len(st.Messages))
				for i, m := range st.Messages {
					ids[i] = m.ID
					if err := decodeRecord(m); err != nil {
						return err
					}
				}
				got += len(ids)
				pipe.XAck(ctx, st.Stream, group, ids...)
			}
			if _, err := pipe.Exec(ctx); err != nil {
				return err
			}
		}
		return nil
	}()
	elapsed := time.Since(start)
	if err != nil {
		stop()
	} else {
		err = span.Stop(ctx)
	}
	return elapsed, errors.Join(err, producer.wait())
}
