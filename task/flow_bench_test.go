package task_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/leatdev/leat/app"
	"github.com/leatdev/leat/internal/tools/redistest"
	"github.com/leatdev/leat/task"
)

// BenchmarkFlowNodes runs a flow of b.N no-op nodes on one worker at
// concurrency 50: a chain (each node after the previous one: every node
// waits for its parent's round trips) or a group (every node a root, run
// in parallel), and reports nodes/s from the submission to the flow's
// end, the same from the submission's end (run-nodes/s), and the
// submission's time per node. Compare with
// BenchmarkNoopTasks for plain tasks.
//
//	go test -run '^$' -bench FlowNodes/group -benchtime 20000x ./task
//	go test -run '^$' -bench FlowNodes/chain -benchtime 2000x ./task
func BenchmarkFlowNodes(b *testing.B) {
	for _, shape := range []string{"chain", "group"} {
		b.Run(shape, func(b *testing.B) {
			c, prefix := redistest.Client(b)
			ctx := context.Background()
			a, err := app.New(app.Config{Name: "bench", Client: c, KeyPrefix: prefix, Logger: testLogger()})
			if err != nil {
				b.Fatal(err)
			}
			q, err := task.Handle(a, "noop", func(ctx context.Context, t *task.Task[job]) (out, error) {
				return out{Double: t.Payload.N}, nil
			}, task.Concurrency(benchConcurrency))
			if err != nil {
				b.Fatal(err)
			}
			wctx, stop := context.WithCancel(ctx)
			done := make(chan error, 1)
			go func() { done <- a.Run(wctx) }()
			f := task.NewFlow(a)
			var prev *task.Node
			for i := range b.N {
				n := task.AddNode(f, fmt.Sprintf("n%d", i), q, job{N: i})
				if shape == "chain" && prev != nil {
					n.After(prev)
				}
				prev = n
			}
			b.ResetTimer()
			start := time.Now()
			id, err := f.Submit(ctx)
			if err != nil {
				b.Fatal(err)
			}
			submitted := time.Since(start)
			if _, err := task.WaitFlow(ctx, a, id); err != nil {
				b.Fatal(err)
			}
			b.StopTimer()
			took := time.Since(start)
			b.ReportMetric(float64(b.N)/took.Seconds(), "nodes/s")
			b.ReportMetric(float64(b.N)/(took-submitted).Seconds(), "run-nodes/s")
			b.ReportMetric(float64(submitted.Microseconds())/float64(b.N), "submit-µs/node")
			stop()
			if err := <-done; err != nil {
				b.Fatal(err)
			}
		})
	}
}
