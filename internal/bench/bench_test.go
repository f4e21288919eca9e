package bench_test

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/leatdev/leat/internal/bench"
	"github.com/leatdev/leat/internal/redistest"
	"github.com/redis/go-redis/v9"
)

func TestMain(m *testing.M) { redistest.Main(m) }

// The tests of this package run one at a time: each checks that no key of
// any benchmark is left on the shared server.

// tiny is a configuration that runs in well under a second.
var tiny = bench.Config{Events: 2000, Rounds: 2, Partitions: 4, PayloadBytes: 16, Logger: slog.New(slog.DiscardHandler)}

func TestSend(t *testing.T) {
	c, _ := redistest.Client(t)
	r, err := bench.Send(context.Background(), c, tiny)
	if err != nil {
		t.Fatal(err)
	}
	checkResult(t, r, bench.BenchmarkSend, bench.VariantLeat, bench.VariantRaw)
	if r.RatioDecode != 0 {
		t.Errorf("send has a raw+decode ratio %v", r.RatioDecode)
	}
	checkClean(t, c)
}

func TestProcess(t *testing.T) {
	c, _ := redistest.Client(t)
	r, err := bench.Process(context.Background(), c, tiny)
	if err != nil {
		t.Fatal(err)
	}
	checkResult(t, r, bench.BenchmarkProcess, bench.VariantLeat, bench.VariantRaw, bench.VariantRawDecode)
	if r.RatioDecode <= 0 {
		t.Errorf("raw+decode ratio %v, want positive", r.RatioDecode)
	}
	checkClean(t, c)
}

func TestDefaults(t *testing.T) {
	c, _ := redistest.Client(t)
	// Only the event count is small: the rest are the defaults.
	r, err := bench.Send(context.Background(), c, bench.Config{Events: 100, Logger: tiny.Logger})
	if err != nil {
		t.Fatal(err)
	}
	want := bench.Config{Events: 100, Rounds: bench.DefaultRounds, Partitions: bench.DefaultPartitions, PayloadBytes: bench.DefaultPayloadBytes}
	if got := r.Config; got.Events != want.Events || got.Rounds != want.Rounds || got.Partitions != want.Partitions || got.PayloadBytes != want.PayloadBytes {
		t.Errorf("config %+v, want %+v", got, want)
	}
	checkResult(t, r, bench.BenchmarkSend, bench.VariantLeat, bench.VariantRaw)
	checkClean(t, c)
}

// TestCleanupOnError interrupts benchmarks part way: they fail, and leave no
// key behind.
func TestCleanupOnError(t *testing.T) {
	c, _ := redistest.Client(t)
	cfg := tiny
	cfg.Events = 50_000
	for name, run := range map[string]func(context.Context, redis.UniversalClient, bench.Config) (bench.Result, error){
		"send": bench.Send, "process": bench.Process,
	} {
		t.Run(name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
			defer cancel()
			if _, err := run(ctx, c, cfg); err == nil {
				t.Fatal("no error after the context ended")
			}
			checkClean(t, c)
		})
	}
}

func TestBadConfig(t *testing.T) {
	c, _ := redistest.Client(t)
	_, err := bench.Send(context.Background(), c, bench.Config{Events: -1, Partitions: 70000})
	if err == nil || !strings.Contains(err.Error(), "events -1 out of range") || !strings.Contains(err.Error(), "partitions 70000 out of range") {
		t.Errorf("error %v, want both problems named", err)
	}
	cluster := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{"127.0.0.1:1"}})
	defer cluster.Close()
	if _, err := bench.Process(context.Background(), cluster, tiny); err == nil || !strings.Contains(err.Error(), "Cluster is not supported") {
		t.Errorf("cluster client: error %v", err)
	}
}

// checkResult checks that r is a result of benchmark with the variants
// named, each with one positive rate per round, and a positive ratio.
func checkResult(t *testing.T, r bench.Result, benchmark string, variants ...string) {
	t.Helper()
	if r.Benchmark != benchmark {
		t.Errorf("benchmark %q, want %q", r.Benchmark, benchmark)
	}
	if len(r.Variants) != len(variants) {
		t.Fatalf("variants %+v, want %q", r.Variants, variants)
	}
	for i, v := range r.Variants {
		if v.Name != variants[i] {
			t.Errorf("variant %d is %q, want %q", i, v.Name, variants[i])
		}
		if len(v.Rates) != r.Config.Rounds {
			t.Errorf("%s: %d rates, want one per round (%d)", v.Name, len(v.Rates), r.Config.Rounds)
		}
		for _, rate := range v.Rates {
			if rate <= 0 {
				t.Errorf("%s: rate %v, want positive", v.Name, rate)
			}
		}
		if v.Median <= 0 {
			t.Errorf("%s: median %v, want positive", v.Name, v.Median)
		}
	}
	if r.Ratio <= 0 {
		t.Errorf("ratio %v, want positive", r.Ratio)
	}
}

// checkClean fails t when the server holds a key of any benchmark.
func checkClean(t *testing.T, c *redis.Client) {
	t.Helper()
	keys, err := scanAll(c, bench.PrefixRoot+"*")
	if err != nil {
		t.Fatal(err)
	}
	if len(keys) > 0 {
		t.Errorf("%d benchmark keys left, such as %q", len(keys), keys[0])
	}
}

func scanAll(c *redis.Client, pattern string) ([]string, error) {
	ctx := context.Background()
	var keys []string
	it := c.Scan(ctx, 0, pattern, 1000).Iterator()
	for it.Next(ctx) {
		keys = append(keys, it.Val())
	}
	return keys, it.Err()
}

func TestTasks(t *testing.T) {
	c, _ := redistest.Client(t)
	r, err := bench.Tasks(context.Background(), c, tiny)
	if err != nil {
		t.Fatal(err)
	}
	checkResult(t, r, bench.BenchmarkTasks, bench.VariantLeat, bench.VariantRaw)
	checkClean(t, c)
}
