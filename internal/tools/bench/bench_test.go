package bench_test

import (
	"context"
	"log/slog"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/leatdev/leat/internal/tools/bench"
	"github.com/leatdev/leat/internal/tools/redistest"
	"github.com/redis/go-redis/v9"
)

func TestMain(m *testing.M) { redistest.Main(m) }

// The tests of this package run one at a time: each checks that no key of
// any benchmark is left on the shared server.

// tiny is a configuration that runs in well under a second.
var tiny = bench.Config{
	Events: 2000, Rounds: 2, Partitions: 4, PayloadBytes: 16,
	Rate: 500, Latency: 200 * time.Millisecond, Idle: 200 * time.Millisecond, Wide: 8,
	Logger: slog.New(slog.DiscardHandler),
}

func TestSend(t *testing.T) {
	c, _ := redistest.Client(t)
	r, err := bench.Send(context.Background(), c, tiny)
	if err != nil {
		t.Fatal(err)
	}
	checkResult(t, r, bench.BenchmarkSend, bench.VariantLeat, bench.VariantRaw)
	checkRatio(t, r, bench.VariantLeat, bench.VariantRaw, bench.FigureRate)
	checkClean(t, c)
}

func TestProcess(t *testing.T) {
	c, _ := redistest.Client(t)
	r, err := bench.Process(context.Background(), c, tiny)
	if err != nil {
		t.Fatal(err)
	}
	checkResult(t, r, bench.BenchmarkProcess, bench.VariantLeat, bench.VariantRaw, bench.VariantRawDecode)
	checkRatio(t, r, bench.VariantLeat, bench.VariantRaw, bench.FigureRate)
	checkRatio(t, r, bench.VariantLeat, bench.VariantRawDecode, bench.FigureRate)
	checkCPU(t, r, bench.FigureEventRedisCPU, bench.FigureEventClientCPU, bench.VariantLeat, bench.VariantRaw, bench.VariantRawDecode)
	checkRatio(t, r, bench.VariantLeat, bench.VariantRawDecode, bench.FigureEventClientCPU)
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
		"send": bench.Send, "process": bench.Process, "produce+consume": bench.Both, "latency": bench.Latency,
		"tasks": bench.Tasks, "rebalance": bench.Rebalance, "memory": bench.Memory, "idle": bench.Idle,
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
// named, each figure with one value per round and a median.
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
		if len(v.Figures) == 0 {
			t.Errorf("%s: no figures", v.Name)
		}
		for _, f := range v.Figures {
			if len(f.Values) != r.Config.Rounds {
				t.Errorf("%s %s: %d values, want one per round (%d)", v.Name, f.Name, len(f.Values), r.Config.Rounds)
			}
		}
	}
}

// checkPositive checks that every value of the figures named of variant is
// positive.
func checkPositive(t *testing.T, r bench.Result, variant string, figures ...string) {
	t.Helper()
	v := r.Variant(variant)
	if v == nil {
		t.Fatalf("no variant %q", variant)
	}
	for _, name := range figures {
		f := v.Figure(name)
		if f == nil {
			t.Errorf("%s: no figure %q", variant, name)
			continue
		}
		for _, x := range f.Values {
			if x <= 0 {
				t.Errorf("%s %s: value %v, want positive", variant, name, x)
			}
		}
	}
}

// checkRatio checks that r has a positive ratio of figure between of and
// to, and that both have the figure positive in every round.
func checkRatio(t *testing.T, r bench.Result, of, to, figure string) {
	t.Helper()
	checkPositive(t, r, of, figure)
	checkPositive(t, r, to, figure)
	if v, ok := r.Ratio(of, to, figure); !ok || v <= 0 {
		t.Errorf("ratio %s/%s of %s: %v %v, want positive", of, to, figure, v, ok)
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
	c10, c50 := bench.TaskVariant(10), bench.TaskVariant(50)
	checkResult(t, r, bench.BenchmarkTasks, c10, c50, bench.VariantRaw)
	checkRatio(t, r, c10, bench.VariantRaw, bench.FigureTaskRate)
	checkRatio(t, r, c50, bench.VariantRaw, bench.FigureTaskRate)
	checkCPU(t, r, bench.FigureRedisCPU, bench.FigureClientCPU, c10, c50, bench.VariantRaw)
	checkRatio(t, r, c50, bench.VariantRaw, bench.FigureRedisCPU)
	checkClean(t, c)
}

func TestBoth(t *testing.T) {
	c, _ := redistest.Client(t)
	r, err := bench.Both(context.Background(), c, tiny)
	if err != nil {
		t.Fatal(err)
	}
	checkResult(t, r, bench.BenchmarkBoth, bench.VariantLeat, bench.VariantRaw)
	checkRatio(t, r, bench.VariantLeat, bench.VariantRaw, bench.FigureRate)
	checkCPU(t, r, bench.FigureEventRedisCPU, bench.FigureEventClientCPU, bench.VariantLeat, bench.VariantRaw)
	checkRatio(t, r, bench.VariantLeat, bench.VariantRaw, bench.FigureEventRedisCPU)
	checkClean(t, c)
}

func TestLatency(t *testing.T) {
	c, _ := redistest.Client(t)
	r, err := bench.Latency(context.Background(), c, tiny)
	if err != nil {
		t.Fatal(err)
	}
	// the wide variants run over tiny.Wide partitions (8, against 4)
	checkResult(t, r, bench.BenchmarkLatency, bench.VariantLeat, bench.VariantRaw, bench.VariantLeatWide, bench.VariantRawWide)
	for _, f := range []string{bench.FigureP50, bench.FigureP99, bench.FigureP999, bench.FigureSent} {
		checkRatio(t, r, bench.VariantLeat, bench.VariantRaw, f)
		checkRatio(t, r, bench.VariantLeatWide, bench.VariantRawWide, f)
	}
	for _, v := range r.Variants {
		p50, p99, p999 := v.Figure(bench.FigureP50), v.Figure(bench.FigureP99), v.Figure(bench.FigureP999)
		for i := range p50.Values {
			if !(p50.Values[i] <= p99.Values[i] && p99.Values[i] <= p999.Values[i]) {
				t.Errorf("%s round %d: p50 %v, p99 %v, p99.9 %v out of order", v.Name, i+1, p50.Values[i], p99.Values[i], p999.Values[i])
			}
		}
	}
	checkClean(t, c)
}

func TestRebalance(t *testing.T) {
	c, _ := redistest.Client(t)
	cfg := tiny
	cfg.Rounds = 1
	r, err := bench.Rebalance(context.Background(), c, cfg)
	if err != nil {
		t.Fatal(err)
	}
	checkResult(t, r, bench.BenchmarkRebalance, bench.VariantJoin, bench.VariantStop)
	// Of 4 partitions, sticky assignment moves half to the joining worker
	// and back when it leaves; each moved one pauses a while.
	for _, v := range r.Variants {
		if moved := v.Figure(bench.FigureMoved).Values[0]; moved != 2 {
			t.Errorf("%s: %v partitions moved, want 2", v.Name, moved)
		}
	}
	checkPositive(t, r, bench.VariantJoin, bench.FigureMovedGap, bench.FigureUnmovedGap)
	checkPositive(t, r, bench.VariantStop, bench.FigureMovedGap, bench.FigureUnmovedGap)
	if _, err := bench.Rebalance(context.Background(), c, bench.Config{Partitions: 1}); err == nil || !strings.Contains(err.Error(), "at least 2") {
		t.Errorf("one partition: error %v", err)
	}
	checkClean(t, c)
}

func TestMemory(t *testing.T) {
	c, _ := redistest.Client(t)
	cfg := tiny
	cfg.Rounds = 1
	r, err := bench.Memory(context.Background(), c, cfg)
	if err != nil {
		t.Fatal(err)
	}
	checkResult(t, r, bench.BenchmarkMemory, bench.VariantRSS, bench.VariantLeat, bench.VariantRaw, bench.VariantRawKeyed)
	checkPositive(t, r, bench.VariantRSS, bench.FigureRSSBase, bench.FigureRSSIdle, bench.FigureRSSDrain)
	checkRatio(t, r, bench.VariantLeat, bench.VariantRaw, bench.FigureEntryBytes)
	// Each entry holds at least its 100 bytes; leat's also its key, so it
	// costs more than raw.
	if raw := r.Variant(bench.VariantRaw).Figure(bench.FigureEntryBytes).Median; raw < 100 {
		t.Errorf("raw entry %v bytes, want at least the 100 of its payload", raw)
	}
	if v, _ := r.Ratio(bench.VariantLeat, bench.VariantRaw, bench.FigureEntryBytes); v <= 1 {
		t.Errorf("leat/raw bytes per entry %v, want above 1", v)
	}
	// Against raw entries of the same key and data, leat adds nothing.
	checkRatio(t, r, bench.VariantLeat, bench.VariantRawKeyed, bench.FigureEntryBytes)
	if v, _ := r.Ratio(bench.VariantLeat, bench.VariantRawKeyed, bench.FigureEntryBytes); v > 1.05 {
		t.Errorf("leat/raw+key bytes per entry %v, want at most 1.05", v)
	}
	checkClean(t, c)
}

func TestIdle(t *testing.T) {
	c, _ := redistest.Client(t)
	cfg := tiny
	cfg.Rounds = 1
	cfg.Idle = 2500 * time.Millisecond // longer than a blocking read (2s), so reads are counted
	r, err := bench.Idle(context.Background(), c, cfg)
	if err != nil {
		t.Fatal(err)
	}
	checkResult(t, r, bench.BenchmarkIdle, bench.VariantLeat, bench.VariantTaskQueues, bench.VariantTaskQueue)
	// A worker holds at least one connection and reads its partitions, or
	// waits for its queues' tasks.
	checkPositive(t, r, bench.VariantLeat, bench.FigureCalls, bench.FigureConnections)
	checkPositive(t, r, bench.VariantTaskQueues, bench.FigureCallsPerQueue, bench.FigureConnections)
	checkPositive(t, r, bench.VariantTaskQueue, bench.FigureCallsPerQueue, bench.FigureConnections)
	checkClean(t, c)
}

// TestAOFServer runs a benchmark against a persisted server the package
// starts.
func TestAOFServer(t *testing.T) {
	if _, err := exec.LookPath("redis-server"); err != nil {
		t.Skip("redis-server is not in PATH")
	}
	s, err := bench.StartAOFServer(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Stop()
	opt, err := redis.ParseURL(s.URL)
	if err != nil {
		t.Fatal(err)
	}
	c := redis.NewClient(opt)
	defer c.Close()
	ctx := context.Background()
	conf, err := c.ConfigGet(ctx, "append*").Result()
	if err != nil {
		t.Fatal(err)
	}
	if conf["appendonly"] != "yes" || conf["appendfsync"] != "everysec" {
		t.Errorf("config %v, want appendonly yes and appendfsync everysec", conf)
	}
	cfg := tiny
	cfg.Rounds = 1
	if _, err := bench.Send(ctx, c, cfg); err != nil {
		t.Fatal(err)
	}
	checkClean(t, c)
}

func TestAOFServerMissing(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	if _, err := bench.StartAOFServer(context.Background()); err == nil || !strings.Contains(err.Error(), "redis-server is not in PATH") {
		t.Errorf("error %v, want redis-server named missing", err)
	}
}

// checkCPU checks that r reports, for each variant named, what its tasks or
// events cost each side's CPU: Redis's (redisFig), and this process's
// (clientFig: the worker, or the raw loop).
func checkCPU(t *testing.T, r bench.Result, redisFig, clientFig string, variants ...string) {
	t.Helper()
	for _, name := range variants {
		v := r.Variant(name)
		for _, fig := range []string{redisFig, clientFig} {
			if f := v.Figure(fig); f == nil || f.Median <= 0 || f.Median > 10_000 {
				t.Errorf("%s: %s is %+v, want a positive number of µs", name, fig, f)
			}
		}
	}
}
