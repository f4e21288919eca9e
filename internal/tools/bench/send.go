package bench

import (
	"context"
	"time"

	"github.com/leatdev/leat/internal/core"
	"github.com/leatdev/leat/stream"
	"github.com/redis/go-redis/v9"
)

// sendChunk is how many records one SendMany call of the leat variant
// carries; SendMany pipelines them in batches of the app's SendBatch.
const sendChunk = 10_000

// Send measures sending cfg.Events records with leat (SendMany, which
// encodes and routes) and with raw go-redis pipelines of XADD MAXLEN ~
// carrying records encoded and routed beforehand. See the package
// documentation. Every key it wrote is deleted before it returns.
func Send(ctx context.Context, client redis.UniversalClient, cfg Config) (Result, error) {
	return run(ctx, client, cfg, BenchmarkSend, func(cfg Config, sp Space) ([]Workload, []Pair, error) {
		recs := records(cfg.Events, cfg.PayloadBytes)
		raw, err := encodeRaw(recs, sp, cfg.Partitions)
		if err != nil {
			return nil, nil, err
		}
		return []Workload{
			Timed(VariantLeat, FigureRate, cfg.Events, func(ctx context.Context) (time.Duration, error) { return sendLeat(ctx, sp, cfg, recs) }),
			Timed(VariantRaw, FigureRate, cfg.Events, func(ctx context.Context) (time.Duration, error) { return sendRaw(ctx, client, raw) }),
		}, []Pair{{VariantLeat, VariantRaw}}, nil
	})
}

// sendLeat sends recs to a new stream with SendMany, sendChunk records per
// call, and returns how long the sends took. The stream's registry entry is
// written before the clock starts.
func sendLeat(ctx context.Context, sp Space, cfg Config, recs []record) (time.Duration, error) {
	a, err := sp.NewApp(cfg)
	if err != nil {
		return 0, err
	}
	defer a.Close()
	s, err := stream.Declare[record](a, streamName, stream.KeyField("customer"))
	if err != nil {
		return 0, err
	}
	if err := a.Register(ctx); err != nil {
		return 0, err
	}
	start := time.Now()
	for i := 0; i < len(recs); i += sendChunk {
		if _, err := s.SendMany(ctx, recs[i:min(i+sendChunk, len(recs))]); err != nil {
			return 0, err
		}
	}
	return time.Since(start), nil
}

// rawEntry is a record encoded and routed for the raw variant: the key of
// its partition and its XADD field/value list in leat's entry layout.
type rawEntry struct {
	key    string
	values []any
}

// encodeRaw encodes and routes recs as leat would, for the raw variant.
func encodeRaw(recs []record, sp Space, partitions int) ([]rawEntry, error) {
	ks := sp.keys()
	out := make([]rawEntry, len(recs))
	for i := range recs {
		data, err := stream.MsgPack.Marshal(&recs[i])
		if err != nil {
			return nil, err
		}
		key := []byte(recs[i].Customer)
		out[i] = rawEntry{
			key:    ks.Partition(streamName, stream.PartitionOf(key, partitions)),
			values: []any{core.FieldKey, key, core.FieldData, data},
		}
	}
	return out, nil
}

// sendRaw sends entries with go-redis pipelines of core.DefaultSendBatch
// XADD MAXLEN ~ commands, the partition size leat uses by default, and
// returns how long it took.
func sendRaw(ctx context.Context, client redis.UniversalClient, entries []rawEntry) (time.Duration, error) {
	start := time.Now()
	for i := 0; i < len(entries); i += core.DefaultSendBatch {
		pipe := client.Pipeline()
		for _, e := range entries[i:min(i+core.DefaultSendBatch, len(entries))] {
			pipe.XAdd(ctx, &redis.XAddArgs{Stream: e.key, MaxLen: stream.DefaultSize, Approx: true, Values: e.values})
		}
		if _, err := pipe.Exec(ctx); err != nil {
			return 0, err
		}
	}
	return time.Since(start), nil
}

// LeatSendEach is the workload that times sending cfg.Events records with
// one Send call each, from the number of goroutines given.
func LeatSendEach(sp Space, cfg Config, goroutines int) Workload {
	return Timed(VariantLeat, FigureRate, cfg.Events, func(ctx context.Context) (time.Duration, error) {
		a, err := sp.NewApp(cfg)
		if err != nil {
			return 0, err
		}
		defer a.Close()
		s, err := stream.Declare[record](a, streamName, stream.KeyField("customer"))
		if err != nil {
			return 0, err
		}
		if err := a.Register(ctx); err != nil {
			return 0, err
		}
		recs := records(cfg.Events, cfg.PayloadBytes)
		start := time.Now()
		err = Spread(ctx, len(recs), goroutines, func(ctx context.Context, i int) error {
			_, err := s.Send(ctx, recs[i])
			return err
		})
		return time.Since(start), err
	})
}

// RawSendEach is the raw baseline of LeatSendEach: each record encoded,
// routed and sent with one XADD MAXLEN ~ call, from the number of
// goroutines given.
func RawSendEach(sp Space, cfg Config, goroutines int) Workload {
	return Timed(VariantRaw, FigureRate, cfg.Events, func(ctx context.Context) (time.Duration, error) {
		recs := records(cfg.Events, cfg.PayloadBytes)
		ks := sp.keys()
		start := time.Now()
		err := Spread(ctx, len(recs), goroutines, func(ctx context.Context, i int) error {
			data, err := stream.MsgPack.Marshal(&recs[i])
			if err != nil {
				return err
			}
			key := []byte(recs[i].Customer)
			return sp.client.XAdd(ctx, &redis.XAddArgs{
				Stream: ks.Partition(streamName, stream.PartitionOf(key, cfg.Partitions)), MaxLen: stream.DefaultSize, Approx: true,
				Values: []any{core.FieldKey, key, core.FieldData, data},
			}).Err()
		})
		return time.Since(start), err
	})
}
