package metrics_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/leatdev/leat/app"
	"github.com/leatdev/leat/executor"
	"github.com/leatdev/leat/inspect"
	"github.com/leatdev/leat/internal/tools/redistest"
	"github.com/leatdev/leat/metrics"
	"github.com/leatdev/leat/stream"
)

func TestMain(m *testing.M) { redistest.Main(m) }

type order struct {
	Customer string `msgpack:"customer"`
	N        int    `msgpack:"n"`
}

func get(t *testing.T, h http.Handler, path string) (int, string) {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
	b, _ := io.ReadAll(rec.Result().Body)
	return rec.Code, string(b)
}

// sample returns the value of the sample of metric whose labels include
// every one of labels (name="value" pairs), summed over the matches.
func sample(body, metric string, labels ...string) (float64, bool) {
	re := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(metric) + `(\{[^}]*\})? (\S+)$`)
	var sum float64
	found := false
	for _, m := range re.FindAllStringSubmatch(body, -1) {
		ok := true
		for _, l := range labels {
			ok = ok && strings.Contains(m[1], l)
		}
		if ok {
			v, _ := strconv.ParseFloat(m[2], 64)
			sum += v
			found = true
		}
	}
	return sum, found
}

// After processing, counters and histograms say what happened, gauges
// what Redis holds; /healthz is live and /readyz ready while the worker
// holds its partitions.
func TestExporter(t *testing.T) {
	t.Parallel()
	c, prefix := redistest.Client(t)
	x, err := metrics.New(metrics.Config{CacheFor: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	a, err := app.New(app.Config{Name: "shop", Client: c, KeyPrefix: prefix, Hooks: []executor.Hook{x},
		Processing: executor.Options{LockExpiry: time.Second, ReadBlock: 100 * time.Millisecond, Grace: time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	orders, err := stream.Declare[order](a, "orders", stream.KeyField("customer"), stream.Partitions(2))
	if err != nil {
		t.Fatal(err)
	}
	var done atomic.Int64
	err = app.Process(a, orders, "totals", func(ctx context.Context, events *stream.Events[order]) error {
		for e := range events.All() {
			if e.Record.N%5 == 4 && e.Deliveries == 1 {
				return errors.New("first try fails")
			}
			done.Add(1)
		}
		return nil
	}, app.Retries(1), app.Backoff(time.Millisecond, time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	x.Gather(inspect.New(c, prefix, "shop"), func() []string { return []string{"orders"} })
	h := metrics.NewHandler(x, metrics.WorkerReady(a.Executors, a.Ping))

	if code, body := get(t, h, "/readyz"); code != http.StatusServiceUnavailable || !strings.Contains(body, "no executor") {
		t.Errorf("/readyz before the worker: %d %q", code, body)
	}
	if code, body := get(t, h, "/healthz"); code != http.StatusOK || body != "ok\n" {
		t.Errorf("/healthz: %d %q", code, body)
	}

	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan error, 1)
	go func() { stopped <- a.Run(ctx) }()
	defer func() { cancel(); <-stopped }()
	redistest.Eventually(t, 10*time.Second, "/readyz ready", func() bool {
		code, _ := get(t, h, "/readyz")
		return code == http.StatusOK
	})

	recs := make([]order, 20)
	for i := range recs {
		recs[i] = order{Customer: "c" + strconv.Itoa(i%7), N: i}
	}
	if _, err := orders.SendMany(ctx, recs); err != nil {
		t.Fatal(err)
	}
	redistest.Eventually(t, 10*time.Second, "20 events processed", func() bool { return done.Load() == 20 })

	var body string
	redistest.Eventually(t, 10*time.Second, "metrics of 20 events", func() bool {
		_, body = get(t, h, "/metrics")
		n, _ := sample(body, "leat_events_processed_total", `stream="orders"`, `processor="totals"`)
		pending, found := sample(body, "leat_pending", `processor="totals"`)
		return n == 20 && found && pending == 0 // acks are flushed every few milliseconds
	})
	checks := []struct {
		metric string
		labels []string
		want   func(float64) bool
		what   string
	}{
		{"leat_processor_failures_total", []string{`processor="totals"`}, func(v float64) bool { return v == 4 }, "4 failures"},
		{"leat_handler_duration_seconds_count", []string{`stream="orders"`, `processor="totals"`}, func(v float64) bool { return v >= 1 && v <= 20 }, "one observation per event or batch"},
		{"leat_batch_size_sum", []string{`processor="totals"`}, func(v float64) bool { return v == 20 }, "20 events in batches"},
		{"leat_rebalances_total", []string{`processor="totals"`}, func(v float64) bool { return v >= 1 }, "a rebalance"},
		{"leat_partitions_assigned", []string{`processor="totals"`}, func(v float64) bool { return v == 2 }, "2 partitions"},
		{"leat_pending", []string{`processor="totals"`}, func(v float64) bool { return v == 0 }, "nothing pending"},
		{"leat_lag", []string{`processor="totals"`, `partition="0"`}, func(v float64) bool { return v == 0 }, "no lag"},
		{"leat_partition_length", []string{`stream="orders"`}, func(v float64) bool { return v == 20 }, "20 entries kept"},
		{"leat_partition_size", []string{`stream="orders"`}, func(v float64) bool { return v == 50000 }, "the retention size"},
		{"leat_partition_quarantined", []string{`processor="totals"`}, func(v float64) bool { return v == 0 }, "no quarantine"},
		{"leat_gather_errors_total", nil, func(v float64) bool { return v == 0 }, "no gather error"},
	}
	for _, ck := range checks {
		v, ok := sample(body, ck.metric, ck.labels...)
		if !ok || !ck.want(v) {
			t.Errorf("%s%v = %v (found %v), want %s", ck.metric, ck.labels, v, ok, ck.what)
		}
	}
	if strings.Contains(body, "-0\"") || regexp.MustCompile(`id="`).MatchString(body) {
		t.Error("an entry ID in the labels")
	}

	// Lag appears when the worker is gone and entries arrive.
	cancel()
	if err := <-stopped; err != nil {
		t.Fatal(err)
	}
	stopped <- nil
	if code, _ := get(t, h, "/readyz"); code != http.StatusServiceUnavailable {
		t.Errorf("/readyz after the worker stopped: %d", code)
	}
	if _, err := orders.SendMany(context.Background(), recs[:6]); err != nil {
		t.Fatal(err)
	}
	redistest.Eventually(t, 5*time.Second, "lag of 6", func() bool {
		_, body = get(t, h, "/metrics")
		v, _ := sample(body, "leat_lag", `processor="totals"`)
		return v == 6
	})
}
