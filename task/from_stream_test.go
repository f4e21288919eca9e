package task_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/leatdev/leat/app"
	"github.com/leatdev/leat/internal/tools/redistest"
	"github.com/leatdev/leat/stream"
	"github.com/leatdev/leat/task"
)

type order struct {
	Customer string `msgpack:"customer"`
	N        int    `msgpack:"n"`
}

// A processor that enqueues a task per event with an ID made of the
// event's stream, processor, partition and entry ID creates each task once
// though every event is processed twice (its first run fails after the
// enqueue): the second enqueue is refused with ErrDuplicate, which the
// processor takes as done (docs/exactly-once.md).
func TestEnqueueFromProcessorOncePerEvent(t *testing.T) {
	e := newEnv(t)
	a := e.app("w1")
	orders, err := stream.Declare[order](a, "orders", stream.KeyField("customer"), stream.Partitions(2))
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	ran := map[int]int{}  // task runs by order
	runs := map[int]int{} // processor runs by order
	dups := 0
	q, err := task.Handle(a, "invoices", func(_ context.Context, tk *task.Task[order]) (string, error) {
		mu.Lock()
		ran[tk.Payload.N]++
		mu.Unlock()
		return "", nil
	})
	if err != nil {
		t.Fatal(err)
	}
	err = app.Process(a, orders, "bill", func(ctx context.Context, events *stream.Events[order]) error {
		for ev := range events.All() {
			id := fmt.Sprintf("orders.bill.%d.%s", ev.Partition, ev.ID)
			_, err := q.Enqueue(ctx, ev.Record, task.ID(id))
			mu.Lock()
			if errors.Is(err, task.ErrDuplicate) {
				dups++
				err = nil
			}
			runs[ev.Record.N]++
			first := runs[ev.Record.N] == 1
			mu.Unlock()
			if err != nil {
				return err
			}
			if first {
				return errors.New("failed after the enqueue")
			}
		}
		return nil
	}, app.Retries(3), app.Backoff(time.Millisecond, 5*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	e.run(a)
	const n = 20
	for i := range n {
		if _, err := orders.Send(context.Background(), order{Customer: fmt.Sprint("c", i%5), N: i}); err != nil {
			t.Fatal(err)
		}
	}
	redistest.Eventually(t, 30*time.Second, "every order processed twice and its task run", func() bool {
		mu.Lock()
		defer mu.Unlock()
		twice := 0
		for _, r := range runs {
			if r >= 2 {
				twice++
			}
		}
		return len(ran) == n && twice == n
	})
	mu.Lock()
	defer mu.Unlock()
	for i := range n {
		if runs[i] != 2 || ran[i] != 1 {
			t.Errorf("order %d: processed %d times, its task ran %d times; want 2 and 1", i, runs[i], ran[i])
		}
	}
	if dups != n {
		t.Errorf("%d enqueues refused as duplicates, want %d", dups, n)
	}
}
