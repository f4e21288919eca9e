package task_test

import (
	"context"
	"testing"
	"time"

	"github.com/leatdev/leat/internal/rdb"
	"github.com/leatdev/leat/task"
)

// scanStates counts the task hashes of queue by state with a full scan.
func scanStates(t *testing.T, e *env, queue string) map[task.State]int64 {
	t.Helper()
	ctx := context.Background()
	prefix := rdb.NewKeySpace(e.prefix, "shop").TaskPrefix(queue)
	out := map[task.State]int64{}
	iter := e.client.Scan(ctx, 0, prefix+"*", 1000).Iterator()
	for iter.Next(ctx) {
		s, err := e.client.HGet(ctx, iter.Val(), "s").Result()
		if err == nil {
			out[task.State(s)]++
		}
	}
	if err := iter.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// checkCounts waits until the counts per state of queue equal want and a
// full scan of its task hashes (states absent from want are 0).
func checkCounts(t *testing.T, e *env, queue string, want map[task.State]int64) {
	t.Helper()
	a := e.app("counts")
	q, err := task.Lookup(context.Background(), a, queue)
	if err != nil {
		t.Fatal(err)
	}
	var got, scanned map[task.State]int64
	deadline := time.Now().Add(10 * time.Second)
	for {
		got, err = q.Counts(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		scanned = scanStates(t, e, queue)
		ok := true
		for _, s := range task.States {
			if got[s] != want[s] || scanned[s] != want[s] {
				ok = false
			}
		}
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("counts %v, scan %v, want %v", got, scanned, want)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
