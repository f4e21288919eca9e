package task_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/leatdev/leat/internal/tools/redistest"
	"github.com/leatdev/leat/task"
)

// Programs of one app that handle different queues each run their queues'
// leader-side work, whichever of them is the app's leader: a queue handled
// only by a program that is not the app's leader (a subprocess worker beside
// a Go program, say) still has its delayed tasks promoted, its retries run,
// its cron schedules fired and the tasks of its dead workers reclaimed.
func TestQueueLeaderAmongItsWorkers(t *testing.T) {
	e := newEnv(t)
	ctx := ctxT(t)
	first := e.app("first")
	if _, err := task.Handle(first, "a", func(ctx context.Context, tk *task.Task[int]) (int, error) { return tk.Payload, nil }); err != nil {
		t.Fatal(err)
	}
	e.run(first)
	redistest.Eventually(t, 10*time.Second, "the first program leads the app", first.IsLeader)

	second := e.app("second")
	var failed atomic.Bool
	b, err := task.Handle(second, "b", func(ctx context.Context, tk *task.Task[int]) (int, error) {
		if tk.Payload == 2 && failed.CompareAndSwap(false, true) {
			return 0, errors.New("once")
		}
		return tk.Payload, nil
	}, task.Backoff(50*time.Millisecond, 50*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Cron("tick", "* * * * * *", 3); err != nil {
		t.Fatal(err)
	}
	e.run(second)
	delayed, err := b.Enqueue(ctx, 1, task.Delay(200*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	retried, err := b.Enqueue(ctx, 2)
	if err != nil {
		t.Fatal(err)
	}
	for what, id := range map[string]string{"delayed": delayed, "retried": retried} {
		wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		in, err := b.Wait(wctx, id)
		cancel()
		if err != nil || in.State != task.Succeeded {
			t.Fatalf("the %s task: %+v %v, want succeeded", what, in, err)
		}
	}
	redistest.Eventually(t, 10*time.Second, "a cron tick of queue b run", func() bool {
		c, err := b.Counts(ctx)
		return err == nil && c[task.Succeeded] >= 3
	})
	if s, err := b.Summary(ctx); err != nil || s.Leader != "second" {
		t.Fatalf("queue b's summary names leader %q (%v), want the second program's worker", s.Leader, err)
	}
	if sums, err := task.Summaries(ctx, first); err != nil || len(sums) != 2 || sums[0].Leader != "first" || sums[1].Leader != "second" {
		t.Fatalf("summaries %+v (%v): want queue a led by the first program, b by the second", sums, err)
	}
	if !first.IsLeader() || second.IsLeader() {
		t.Fatalf("the app's leader moved (first %v, second %v): the test proves nothing", first.IsLeader(), second.IsLeader())
	}
}
