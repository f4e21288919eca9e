package app_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/leatdev/leat/app"
	"github.com/leatdev/leat/stream"
)

// BenchmarkTable runs BenchmarkProcess's backlog (16 partitions, 1,000 keys)
// through a processor that adds one to each event's key in a table: one
// event per acknowledgement (a commit per event), or batches of 100 (a
// commit per batch). Compare with BenchmarkProcess:
//
//	go test -run XXX -bench 'Table|Process$' -benchtime 100000x ./app
func BenchmarkTable(b *testing.B) {
	for _, batch := range []int{1, 100} {
		b.Run(map[int]string{1: "event", 100: "batch-100"}[batch], func(b *testing.B) {
			_, _, s, a := benchFill(b, b.N)
			counts, err := stream.DeclareTable[int](s, "bench", "counts")
			if err != nil {
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
			err = app.Process(a, s, "bench", func(ctx context.Context, events *stream.Events[event]) error {
				st := counts.In(events)
				if batch == 1 {
					for e := range events.All() {
						if err := addOne(ctx, st, string(e.Key)); err != nil {
							return err
						}
						count(1)
					}
					return nil
				}
				for es := range events.Batches(batch, 5*time.Millisecond) {
					for _, e := range es {
						if err := addOne(ctx, st, string(e.Key)); err != nil {
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
		})
	}
}
