package app_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/leatdev/leat/app"
	"github.com/leatdev/leat/internal/rdb"
	"github.com/leatdev/leat/stream"
)

// BenchmarkJoin runs BenchmarkTable's backlog (16 partitions, 1,000 keys,
// a table write per event) with and without a join: each event also reads
// its key's value in another processor's table over a co-partitioned
// stream, one HGET per event, or one HMGET per batch of 100:
//
//	go test -run XXX -bench 'Join' -benchtime 100000x ./app
func BenchmarkJoin(b *testing.B) {
	for _, batch := range []int{1, 100} {
		for _, joined := range []bool{false, true} {
			name := map[int]string{1: "event", 100: "batch-100"}[batch] + map[bool]string{false: "/table", true: "/join"}[joined]
			b.Run(name, func(b *testing.B) { benchJoin(b, batch, joined) })
		}
	}
}

func benchJoin(b *testing.B, batch int, joined bool) {
	c, prefix, s, a := benchFill(b, b.N)
	counts, err := stream.DeclareTable[int](s, "bench", "counts")
	if err != nil {
		b.Fatal(err)
	}
	rates, err := stream.Declare[event](a, "rates", stream.KeyField("key"), stream.Partitions(16))
	if err != nil {
		b.Fatal(err)
	}
	rateTable, err := stream.DeclareTable[int](rates, "keep", "rates")
	if err != nil {
		b.Fatal(err)
	}
	join, err := stream.Join(s, rateTable)
	if err != nil {
		b.Fatal(err)
	}
	// The other processor's table, written as its commits would.
	k := rdb.NewKeySpace(prefix, "bench")
	pipe := c.Pipeline()
	for i := range 1000 {
		key := fmt.Sprintf("key-%d", i)
		p, _ := rates.Partition(event{Key: key})
		v, _ := stream.MsgPack.Marshal(i%10 + 1)
		pipe.HSet(context.Background(), k.Table("rates", "keep", "rates", p), key, v)
	}
	if _, err := pipe.Exec(context.Background()); err != nil {
		b.Fatal(err)
	}
	var done atomic.Int64
	finished := make(chan struct{})
	n := int64(b.N)
	count := func(k int) {
		if done.Add(int64(k)) == n {
			close(finished)
		}
	}
	add := func(ctx context.Context, st *stream.Store[int], key string, rate int) error {
		v, _, err := st.Get(ctx, key)
		if err != nil {
			return err
		}
		return st.Set(key, v+rate)
	}
	err = app.Process(a, s, "bench", func(ctx context.Context, events *stream.Events[event]) error {
		st := counts.In(events)
		if batch == 1 {
			for e := range events.All() {
				rate := 1
				if joined {
					r, ok, err := join.Get(ctx, e)
					if err != nil || !ok {
						return fmt.Errorf("join: %v %v", ok, err)
					}
					rate = r
				}
				if err := add(ctx, st, string(e.Key), rate); err != nil {
					return err
				}
				count(1)
			}
			return nil
		}
		for es := range events.Batches(batch, 5*time.Millisecond) {
			var rs []int
			if joined {
				var ok []bool
				if rs, ok, err = join.GetBatch(ctx, es); err != nil || !ok[0] {
					return fmt.Errorf("join: %v", err)
				}
			}
			for i, e := range es {
				rate := 1
				if joined {
					rate = rs[i]
				}
				if err := add(ctx, st, string(e.Key), rate); err != nil {
					return err
				}
			}
			count(len(es))
		}
		return nil
	}, app.ReadBlock(100*time.Millisecond))
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	b.ResetTimer()
	cpu := processCPU(b)
	errc := make(chan error, 1)
	go func() { errc <- a.Run(ctx) }()
	<-finished
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "events/s")
	b.ReportMetric(float64(processCPU(b)-cpu)/float64(b.N), "cpu-ns/event")
	cancel()
	if err := <-errc; err != nil {
		b.Fatal(err)
	}
}
