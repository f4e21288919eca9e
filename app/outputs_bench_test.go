package app_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/leatdev/leat/app"
	"github.com/leatdev/leat/internal/tools/redistest"
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
				forwardBench(b, a, s, mode, batch)
			})
		}
	}
}

// forwardBench runs BenchmarkForward's processor over s's backlog of b.N
// events on a, in mode ("send" or "exactly-once"), batch events per loop
// body.
func forwardBench(b *testing.B, a *app.App, s *stream.Stream[event], mode string, batch int) {
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
}

// BenchmarkForwardCluster is BenchmarkForward on a Redis Cluster of 3
// masters (one process each, on the same machine), where exactly-once
// outputs go through the outbox and its relay:
//
//	go test -run XXX -bench ForwardCluster -benchtime 50000x ./app
func BenchmarkForwardCluster(b *testing.B) {
	cl := redistest.StartCluster(b, 3)
	for _, mode := range []string{"send", "exactly-once"} {
		for _, batch := range []int{1, 100} {
			b.Run(mode+"/"+map[int]string{1: "event", 100: "batch-100"}[batch], func(b *testing.B) {
				c := cl.Client(b)
				a, err := app.New(app.Config{Name: "bench", Client: c, KeyPrefix: redistest.Prefix(b), Logger: testLogger()})
				if err != nil {
					b.Fatal(err)
				}
				s, err := stream.Declare[event](a, "events", stream.KeyField("key"), stream.Partitions(16), stream.Size(int64(b.N)+1000))
				if err != nil {
					b.Fatal(err)
				}
				batchOf := make([]event, 0, 10000)
				for i := range b.N {
					batchOf = append(batchOf, event{Key: fmt.Sprintf("key-%d", i%1000), Seq: i})
					if len(batchOf) == cap(batchOf) || i == b.N-1 {
						if _, err := s.SendMany(context.Background(), batchOf); err != nil {
							b.Fatal(err)
						}
						batchOf = batchOf[:0]
					}
				}
				forwardBench(b, a, s, mode, batch)
			})
		}
	}
}
