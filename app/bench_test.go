package app_test

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/leatdev/leat/app"
	"github.com/leatdev/leat/internal/rdb"
	"github.com/leatdev/leat/internal/tools/redistest"
	"github.com/leatdev/leat/stream"
	"github.com/redis/go-redis/v9"
)

// The processing benchmarks compare a worker running a no-op processor (16
// partitions, one worker, a pre-filled stream) with a raw go-redis loop of
// XREADGROUP over the 16 partitions and pipelined XACKs on the same server.
// Run them with:
//
//	go test -run XXX -bench Process -benchtime 200000x ./app
//
// and compare the events/s metrics, and cpu-ns/event, the client's CPU time
// per event, which the machine's load moves less. The leat figure includes
// decoding every record; the raw loop does not decode.

func benchFill(b *testing.B, n int) (*redis.Client, string, *stream.Stream[event], *app.App) {
	b.Helper()
	c, prefix := redistest.Client(b)
	a, err := app.New(app.Config{Name: "bench", Client: c, KeyPrefix: prefix, Logger: testLogger()})
	if err != nil {
		b.Fatal(err)
	}
	s, err := stream.Declare[event](a, "events", stream.KeyField("key"), stream.Partitions(16), stream.Size(int64(n)+1000))
	if err != nil {
		b.Fatal(err)
	}
	batch := make([]event, 0, 10000)
	for i := range n {
		batch = append(batch, event{Key: fmt.Sprintf("key-%d", i%1000), Seq: i})
		if len(batch) == cap(batch) || i == n-1 {
			if _, err := s.SendMany(context.Background(), batch); err != nil {
				b.Fatal(err)
			}
			batch = batch[:0]
		}
	}
	return c, prefix, s, a
}

func BenchmarkProcess(b *testing.B) {
	_, _, s, a := benchFill(b, b.N)
	var done atomic.Int64
	finished := make(chan struct{})
	n := int64(b.N)
	err := app.Process(a, s, "bench", func(ctx context.Context, events *stream.Events[event]) error {
		for range events.All() {
			if done.Add(1) == n {
				close(finished)
			}
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

func BenchmarkProcessRawGoRedis(b *testing.B) {
	c, prefix, _, _ := benchFill(b, b.N)
	ctx := context.Background()
	ks := rdb.NewKeySpace(prefix, "bench")
	streams := make([]string, 0, 32)
	for p := range 16 {
		key := ks.Partition("events", p)
		if err := c.XGroupCreateMkStream(ctx, key, "raw", "0").Err(); err != nil {
			b.Fatal(err)
		}
		streams = append(streams, key)
	}
	for range 16 {
		streams = append(streams, ">")
	}
	b.ResetTimer()
	cpu := processCPU(b)
	got := 0
	for got < b.N {
		res, err := c.XReadGroup(ctx, &redis.XReadGroupArgs{Group: "raw", Consumer: "c", Streams: streams, Count: 100, Block: 100 * time.Millisecond}).Result()
		if err != nil {
			b.Fatal(err)
		}
		pipe := c.Pipeline()
		for _, st := range res {
			ids := make([]string, len(st.Messages))
			for i, m := range st.Messages {
				ids[i] = m.ID
			}
			got += len(ids)
			pipe.XAck(ctx, st.Stream, "raw", ids...)
		}
		if _, err := pipe.Exec(ctx); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "events/s")
	b.ReportMetric(float64(processCPU(b)-cpu)/float64(b.N), "cpu-ns/event")
}

// processCPU returns the CPU time (user and system) the test process has
// used, in nanoseconds: the client's cost, whatever the machine's load,
// without the server's.
func processCPU(b *testing.B) int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}

// BenchmarkSendOneAtATime sends b.N events to an idle worker one at a time,
// each once the last was processed: the idle path (a blocking read's
// wake-up, a fenced read, the hand-off to the partition's consumer, the
// acknowledgement) and one Send per event. It reports the garbage per
// event, of the whole process (sender and worker: what the garbage
// collector must keep up with, and what the latency's tail follows), and
// the send-to-processor latency's p50 and p99:
//
//	go test -run '^$' -bench OneAtATime -benchtime 5000x ./app
func BenchmarkSendOneAtATime(b *testing.B) {
	c, prefix := redistest.Client(b)
	a, err := app.New(app.Config{Name: "bench", Client: c, KeyPrefix: prefix, Logger: testLogger()})
	if err != nil {
		b.Fatal(err)
	}
	s, err := stream.Declare[event](a, "events", stream.KeyField("key"), stream.Partitions(16))
	if err != nil {
		b.Fatal(err)
	}
	got := make(chan struct{}, 1)
	err = app.Process(a, s, "bench", func(ctx context.Context, events *stream.Events[event]) error {
		for range events.All() {
			got <- struct{}{}
		}
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- a.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-errc; err != nil {
			b.Error(err)
		}
	}()
	keys := make([]string, 64)
	for i := range keys {
		keys[i] = fmt.Sprint("key-", i)
	}
	stuck := time.AfterFunc(time.Hour, func() { panic("an event not processed within a minute") })
	defer stuck.Stop()
	one := func(i int) time.Duration {
		start := time.Now()
		stuck.Reset(time.Minute)
		if _, err := s.Send(ctx, event{Key: keys[i%len(keys)], Seq: i}); err != nil {
			b.Fatal(err)
		}
		<-got
		return time.Since(start)
	}
	for i := range 2 * len(keys) { // every partition read once
		one(i)
	}
	lat := make([]time.Duration, b.N)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	b.ResetTimer()
	for i := range b.N {
		lat[i] = one(i)
	}
	b.StopTimer()
	runtime.ReadMemStats(&after)
	slices.Sort(lat)
	b.ReportMetric(float64(after.TotalAlloc-before.TotalAlloc)/float64(b.N), "B/event")
	b.ReportMetric(float64(after.Mallocs-before.Mallocs)/float64(b.N), "allocs/event")
	b.ReportMetric(float64(lat[b.N/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(lat[b.N*99/100].Microseconds()), "p99-µs")
}
