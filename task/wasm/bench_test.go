package wasm_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/leatdev/leat/app"
	"github.com/leatdev/leat/internal/tools/redistest"
	"github.com/leatdev/leat/internal/tools/wasmtest"
	"github.com/leatdev/leat/task"
	"github.com/leatdev/leat/task/wasm"
)

// BenchmarkWasmTasks runs b.N word-count tasks on one worker at
// concurrency 10 and 50, with a Go handler and with each contract's test
// module instantiated per task and pooled, on the same Redis, and
// reports tasks/s. Enqueueing is not timed; compiling the module is not
// either (the handler is made before).
//
//	go test -run '^$' -bench WasmTasks -benchtime 2000x ./task/wasm
func BenchmarkWasmTasks(b *testing.B) {
	lines := wasmtest.Read(b, wasmtest.Lines(b, "v1"))
	reactor := wasmtest.Read(b, wasmtest.Reactor(b, "v1"))
	kinds := []struct {
		name   string
		module []byte
		pool   bool
	}{
		{"go", nil, false},
		{"reactor-per-task", reactor, false},
		{"reactor-pooled", reactor, true},
		{"lines-per-task", lines, false},
		{"lines-pooled", lines, true},
		{"echo-per-task", wasmtest.Echo(), false},
		{"echo-pooled", wasmtest.Echo(), true},
	}
	for _, conc := range []int{10, 50} {
		for _, k := range kinds {
			b.Run(fmt.Sprintf("%s/c%d", k.name, conc), func(b *testing.B) {
				benchTasks(b, conc, k.module, k.pool)
			})
		}
	}
}

func benchTasks(b *testing.B, conc int, module []byte, pool bool) {
	c, prefix := redistest.Client(b)
	ctx := context.Background()
	a, err := app.New(app.Config{Name: "bench", Client: c, KeyPrefix: prefix, Logger: quietLogger()})
	if err != nil {
		b.Fatal(err)
	}
	defer a.Close()
	handle := func(ctx context.Context, t *task.Task[json.RawMessage]) (json.RawMessage, error) {
		var p struct{ Text string }
		if err := json.Unmarshal(t.Payload, &p); err != nil {
			return nil, err
		}
		return json.Marshal(map[string]any{"words": len(p.Text), "version": "go"})
	}
	payload := json.RawMessage(`{"text": "one two three four"}`)
	if module != nil {
		h, err := wasm.New(ctx, wasm.Config{Module: module, Reusable: pool, Pool: pool, CacheDir: cacheDir(b), Logger: quietLogger()})
		if err != nil {
			b.Fatal(err)
		}
		defer h.Close(ctx)
		handle = h.Handle
		if len(module) < 1000 { // the echo module answers its payload
			payload = json.RawMessage(`{"result": {"words": 4}}`)
		}
	}
	q, err := task.Handle(a, "words", handle, task.Concurrency(conc))
	if err != nil {
		b.Fatal(err)
	}
	ps := make([]json.RawMessage, b.N)
	for i := range ps {
		ps[i] = payload
	}
	if _, err := q.EnqueueMany(ctx, ps); err != nil {
		b.Fatal(err)
	}
	wctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	b.ResetTimer()
	start := time.Now()
	go func() { done <- a.Run(wctx) }()
	for {
		n, err := q.Counts(ctx)
		if err != nil {
			b.Fatal(err)
		}
		if n[task.Succeeded] >= int64(b.N) {
			break
		}
		if f := n[task.Dead] + n[task.Failed] + n[task.Retrying]; f > 0 {
			b.Fatalf("%d tasks failed", f)
		}
		time.Sleep(5 * time.Millisecond)
	}
	b.StopTimer()
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "tasks/s")
	stop()
	if err := <-done; err != nil {
		b.Fatal(err)
	}
}
