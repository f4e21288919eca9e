package app_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/leatdev/leat/app"
	"github.com/leatdev/leat/stream"
)

// BenchmarkWindowed runs BenchmarkProcess's backlog (16 partitions, 1,000
// keys) through a processor that counts each event in its key's window of
// a windowed table, by the entry's time, one event per acknowledgement,
// beside the same processor counting in a plain table:
//
//	go test -run XXX -bench 'Windowed' -benchtime 100000x ./app
//
// "tumbling-1s-emit" closes a window per key every second of entry time
// and emits it to a stream; "hopping-1m-10s" updates six windows per event.
func BenchmarkWindowed(b *testing.B) {
	variants := []struct {
		name string
		kind stream.WindowKind
		emit bool
	}{
		{"table", stream.WindowKind{}, false},
		{"tumbling-1m", stream.Tumbling(time.Minute), false},
		{"tumbling-1s-emit", stream.Tumbling(time.Second), true},
		{"hopping-1m-10s", stream.Hopping(time.Minute, 10*time.Second), false},
	}
	for _, v := range variants {
		b.Run(v.name, func(b *testing.B) {
			_, _, s, a := benchFill(b, b.N)
			var done atomic.Int64
			finished := make(chan struct{})
			n := int64(b.N)
			count := func() {
				if done.Add(1) == n {
					close(finished)
				}
			}
			var proc func(ctx context.Context, events *stream.Events[event]) error
			if v.name == "table" {
				counts, err := stream.DeclareTable[int](s, "bench", "counts")
				if err != nil {
					b.Fatal(err)
				}
				proc = func(ctx context.Context, events *stream.Events[event]) error {
					st := counts.In(events)
					for e := range events.All() {
						if err := addOne(ctx, st, string(e.Key)); err != nil {
							return err
						}
						count()
					}
					return nil
				}
			} else {
				var opts []stream.WindowOption
				if v.emit {
					out, err := stream.Declare[stream.WindowRecord[int]](a, "windows", stream.KeyField("key"))
					if err != nil {
						b.Fatal(err)
					}
					opts = append(opts, stream.EmitTo(out))
				}
				w, err := stream.DeclareWindowed[int](s, "bench", "counts", v.kind, opts...)
				if err != nil {
					b.Fatal(err)
				}
				proc = func(ctx context.Context, events *stream.Events[event]) error {
					ws := w.In(events)
					for e := range events.All() {
						if _, err := ws.Update(e, func(n int, _ bool) int { return n + 1 }); err != nil {
							return err
						}
						count()
					}
					return nil
				}
			}
			if err := app.Process(a, s, "bench", proc, app.ReadBlock(100*time.Millisecond)); err != nil {
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
