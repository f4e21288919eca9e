package stream

import (
	"context"
	"fmt"
	"testing"

	"github.com/leatdev/leat/internal/core"
	"github.com/redis/go-redis/v9"
)

// The send benchmarks compare SendMany (encode + route + pipelined XADD) with
// a raw go-redis pipelined XADD loop of the same, already encoded payloads on
// the same server. Run them with:
//
//	go test -run XXX -bench Send -benchtime 200000x ./stream
//
// and compare the events/s metrics.

const (
	benchCall  = 10000 // records per SendMany call
	benchBatch = 1000  // XADDs per pipelined round trip, for both
)

func benchRecords(n int) []order {
	recs := make([]order, n)
	for i := range recs {
		recs[i] = order{ID: int64(i), Customer: fmt.Sprintf("customer-%d", i%1000), Amount: float64(i) / 3}
	}
	return recs
}

func BenchmarkSendMany(b *testing.B) {
	cat, c := newCatalog(b, core.Defaults{SendBatch: benchBatch})
	s, err := Declare[order](cat, "orders", KeyField("customer"), Size(1000))
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	recs := benchRecords(benchCall)
	b.ReportAllocs()
	b.ResetTimer()
	for sent := 0; sent < b.N; sent += len(recs) {
		if _, err := s.SendMany(ctx, recs[:min(len(recs), b.N-sent)]); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "events/s")
	_ = c
}

func BenchmarkSendRawGoRedis(b *testing.B) {
	cat, c := newCatalog(b, core.Defaults{})
	ctx := context.Background()
	recs := benchRecords(benchCall)
	type pre struct {
		key  string
		vals []any
	}
	// Encoding and routing are done up front: the raw loop only sends.
	payloads := make([]pre, len(recs))
	for i := range recs {
		data, _ := MsgPack.Marshal(&recs[i])
		p := PartitionOf([]byte(recs[i].Customer), 16)
		payloads[i] = pre{cat.c.Keys().Partition("orders", p), []any{"key", recs[i].Customer, "data", data}}
	}
	b.ReportAllocs()
	b.ResetTimer()
	for sent := 0; sent < b.N; {
		chunk := payloads[:min(benchBatch, b.N-sent)]
		pipe := c.Pipeline()
		for _, p := range chunk {
			pipe.XAdd(ctx, &redis.XAddArgs{Stream: p.key, MaxLen: 1000, Approx: true, Values: p.vals})
		}
		if _, err := pipe.Exec(ctx); err != nil {
			b.Fatal(err)
		}
		sent += len(chunk)
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "events/s")
}
