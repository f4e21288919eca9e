package app_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/leatdev/leat/app"
	"github.com/leatdev/leat/stream"
)

// BenchmarkForward runs BenchmarkProcess's backlog (16 partitions, 1,000
// keys) through a processor that forwards each event, re-keyed, to a
// stream of 16 partitions: with exactly-once outputs (staged, written by
// the commit that acknowledges, "exactly-once") or with a plain Send in the
// loop body ("send"), one event at a time or in batches of 100 (one Send
// or one commit per batch). Compare:
//
//	go test -run XXX -bench Forward -benchtime 100000x ./app
func BenchmarkForward(b *testing.B) {
	for _, mode := range []string{"send", "exactly-once"} {
		for _, batch := range []int{1, 100} {
			b.Run(mode+"/"+map[int]string{1: "event", 100: "batch-100"}[batch], func(b *testing.B) {
				_, _, s, a := benchFill(b, b.N)
				fwd, err := stream.Declare[event](a, "forwarded", stream.KeyField("key"), stream.Partitions(16))
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
					out := fwd.In(events)
					send := func(recs ...event) error {
						if mode == "send" {
							_, err := fwd.Send(ctx, recs...)
							return err
						}
						return out.Send(recs...)
					}
					if batch == 1 {
						for e := range events.All() {
							if err := send(forwarded(e.Record)); err != nil {
								return err
							}
							count(1)
						}
						return nil
					}
					recs := make([]event, 0, batch)
					for es := range events.Batches(batch, 5*time.Millisecond) {
						recs = recs[:0]
						for _, e := range es {
							recs = append(recs, forwarded(e.Record))
						}
						if err := send(recs...); err != nil {
							return err
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
}
