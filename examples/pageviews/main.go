// Command pageviews counts page views per page and minute with a windowed
// table, and prints each minute's count once the minute has closed.
package main

import (
	"context"
	"fmt"
	"io"
	"log"
	"os"
	"os/signal"
	"sort"
	"sync"
	"time"

	"github.com/leatdev/leat/app"
	"github.com/leatdev/leat/leattest"
	"github.com/leatdev/leat/stream"
	"github.com/redis/go-redis/v9"
)

// View is one page view; At is when it happened (Unix ms), its event time.
type View struct {
	Page string `msgpack:"page"`
	At   int64  `msgpack:"at"`
}

// base is the time of the first view: the output is the same on every run.
var base = time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)

var pages = []string{"/", "/pricing", "/docs"}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	// LEAT_REDIS_URL, else a redis-server on 127.0.0.1:6379, else in memory.
	client, closeRedis, err := leattest.TryRedis(ctx, os.Stdout)
	if err != nil {
		log.Fatal(err)
	}
	defer closeRedis()
	if err := run(ctx, client, "", os.Stdout); err != nil {
		log.Fatal(err)
	}
}

// run declares the streams, sends three minutes of views, and runs a
// worker until every closed minute was printed. The keys go under prefix
// (the default one when "").
func run(ctx context.Context, client redis.UniversalClient, prefix string, out io.Writer) error {
	a, err := app.New(app.Config{Name: "pageviews", Client: client, KeyPrefix: prefix})
	if err != nil {
		return err
	}
	defer a.Close()
	views, err := stream.Declare[View](a, "views", stream.KeyField("page"), stream.Partitions(4))
	if err != nil {
		return err
	}
	// Each minute's final count, emitted once when the minute closes.
	perMinute, err := stream.Declare[stream.WindowRecord[int64]](a, "views-per-minute", stream.KeyField("key"), stream.Partitions(4))
	if err != nil {
		return err
	}
	counts, err := stream.DeclareWindowed[int64](views, "counter", "per-minute", stream.Tumbling(time.Minute),
		stream.Grace(5*time.Second),
		stream.EventTime(func(v View) time.Time { return time.UnixMilli(v.At) }),
		stream.EmitTo(perMinute))
	if err != nil {
		return err
	}
	err = app.Process(a, views, "counter", func(ctx context.Context, events *stream.Events[View]) error {
		ws := counts.In(events)
		for e := range events.All() {
			if _, err := ws.Update(e, func(n int64, _ bool) int64 { return n + 1 }); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return err
	}

	worker, stopWorker := context.WithCancel(ctx)
	defer stopWorker()
	var mu sync.Mutex
	var lines []string
	want := 3 * len(pages) // three closed minutes per page
	err = app.Process(a, perMinute, "printer", func(ctx context.Context, events *stream.Events[stream.WindowRecord[int64]]) error {
		for r := range events.Records() {
			mu.Lock()
			lines = append(lines, fmt.Sprintf("%s %-9s %d views", r.StartTime().UTC().Format("15:04"), r.Key, r.Value))
			if len(lines) == want {
				stopWorker()
			}
			mu.Unlock()
		}
		return nil
	})
	if err != nil {
		return err
	}

	// One view a second for three minutes, the pages in turn (20 a minute
	// each), then one per page at 12:04, which closes 12:00 to 12:02.
	var vs []View
	for i := range 180 {
		vs = append(vs, View{Page: pages[i%len(pages)], At: base.Add(time.Duration(i) * time.Second).UnixMilli()})
	}
	for _, p := range pages {
		vs = append(vs, View{Page: p, At: base.Add(4 * time.Minute).UnixMilli()})
	}
	if _, err := views.SendMany(ctx, vs); err != nil {
		return err
	}
	if err := a.Run(worker); err != nil {
		return err
	}
	sort.Strings(lines)
	for _, l := range lines {
		fmt.Fprintln(out, l)
	}
	open, _, err := counts.Get(ctx, "/docs", base.Add(4*time.Minute))
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "12:04 /docs still open: %d views so far\n", open)
	return nil
}
