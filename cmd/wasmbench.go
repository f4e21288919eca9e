package cmd

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/leatdev/leat/internal/tools/bench"
	"github.com/leatdev/leat/task"
	"github.com/leatdev/leat/task/wasm"
	"github.com/redis/go-redis/v9"
	"github.com/urfave/cli/v2"
)

// Names of the flags of "leat wasm bench".
const (
	flagBenchTasks   = "tasks"
	flagBenchPayload = "payload"
	flagBenchConc    = "concurrency"
)

func wasmBenchCommand() *cli.Command {
	return &cli.Command{
		Name:      "bench",
		Usage:     "measure a module's tasks/s per task and pooled against a Go handler on the same Redis",
		ArgsUsage: "FILE",
		Description: "Runs --tasks tasks of --payload at each --concurrency on one worker of this process,\n" +
			"with a Go handler that decodes the payload and encodes a result, then with the module\n" +
			"instantiated per task, then with its instances pooled, and prints tasks/s. The module\n" +
			"is compiled before the timing. Runs against the --redis server (no --app needed) under\n" +
			"a fresh key prefix leat-bench:RANDOM whose keys are all deleted at the end.",
		HideHelp: true, OnUsageError: onUsageError,
		Flags: []cli.Flag{
			&cli.IntFlag{Name: flagBenchTasks, Usage: "`N` tasks per run", Value: 2000},
			&cli.StringFlag{Name: flagBenchPayload, Usage: "each task's `JSON` payload", Value: `{"text": "to be or not to be"}`},
			&cli.StringFlag{Name: flagBenchConc, Usage: "comma-separated worker `CONCURRENCY` levels", Value: "10,50"},
			helpFlag(),
		},
		Action: wasmBench,
	}
}

func wasmBench(c *cli.Context) error {
	if err := wantArgs(c, "FILE"); err != nil {
		return err
	}
	n := c.Int(flagBenchTasks)
	if n <= 0 {
		return usageErrorf("--%s %d: want a positive number", flagBenchTasks, n)
	}
	payload := json.RawMessage(c.String(flagBenchPayload))
	if !json.Valid(payload) {
		return usageErrorf("--%s is not JSON: %.80s", flagBenchPayload, payload)
	}
	var levels []int
	for _, s := range splitList(c.String(flagBenchConc)) {
		l, err := strconv.Atoi(s)
		if err != nil || l <= 0 {
			return usageErrorf("--%s: %q is not a positive number", flagBenchConc, s)
		}
		levels = append(levels, l)
	}
	module, err := os.ReadFile(c.Args().Get(0))
	if err != nil {
		return err
	}
	client, err := benchClient(c)
	if err != nil {
		return err
	}
	defer client.Close()
	log := slog.New(slog.DiscardHandler)
	w := tabwriter.NewWriter(c.App.Writer, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(w, "handler\tconcurrency\ttasks/s\t")
	for _, conc := range levels {
		for _, kind := range []string{"go", "wasm per task", "wasm pooled"} {
			var handle func(context.Context, *task.Task[json.RawMessage]) (json.RawMessage, error)
			if kind == "go" {
				handle = func(_ context.Context, t *task.Task[json.RawMessage]) (json.RawMessage, error) {
					var v any
					if err := json.Unmarshal(t.Payload, &v); err != nil {
						return nil, err
					}
					return json.Marshal(map[string]any{"payload": v})
				}
			} else {
				pool := kind == "wasm pooled"
				h, err := wasm.New(c.Context, wasm.Config{Module: module, Reusable: pool, Pool: pool, CacheDir: "-", Logger: log})
				if err != nil {
					return err
				}
				defer h.Close(context.Background())
				handle = h.Handle
			}
			rate, err := benchQueue(c.Context, client, handle, conc, n, payload)
			if err != nil {
				return fmt.Errorf("%s at concurrency %d: %w", kind, conc, err)
			}
			fmt.Fprintf(w, "%s\t%d\t%.0f\t\n", kind, conc, rate)
		}
	}
	return w.Flush()
}

// benchQueue runs n tasks of payload with handle at concurrency conc on a
// worker of a fresh key space, and returns the tasks per second.
func benchQueue(ctx context.Context, client redis.UniversalClient, handle func(context.Context, *task.Task[json.RawMessage]) (json.RawMessage, error), conc, n int, payload json.RawMessage) (float64, error) {
	sp, err := bench.NewSpace(client)
	if err != nil {
		return 0, err
	}
	defer sp.Drop(ctx)
	a, err := sp.NewApp(bench.Config{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		return 0, err
	}
	defer a.Close()
	q, err := task.Handle(a, "wasm", handle, task.Concurrency(conc), task.MaxRetries(0))
	if err != nil {
		return 0, err
	}
	ps := make([]json.RawMessage, n)
	for i := range ps {
		ps[i] = payload
	}
	if _, err := q.EnqueueMany(ctx, ps); err != nil {
		return 0, err
	}
	wctx, stop := context.WithCancel(ctx)
	defer stop()
	done := make(chan error, 1)
	start := time.Now()
	go func() { done <- a.Run(wctx) }()
	for {
		counts, err := q.Counts(ctx)
		if err != nil {
			stop()
			<-done
			return 0, err
		}
		if counts[task.Succeeded] >= int64(n) {
			break
		}
		if f := counts[task.Dead] + counts[task.Failed]; f > 0 {
			stop()
			<-done
			return 0, fmt.Errorf("%d tasks failed: the module fails on --%s", f, flagBenchPayload)
		}
		select {
		case err := <-done:
			return 0, fmt.Errorf("worker stopped: %v", err)
		case <-time.After(2 * time.Millisecond):
		}
	}
	rate := float64(n) / time.Since(start).Seconds()
	stop()
	if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
		return 0, err
	}
	return rate, nil
}
