package runner

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/leatdev/leat/executor"
	"github.com/leatdev/leat/internal/core"
	"github.com/leatdev/leat/internal/tools/redistest"
	"github.com/redis/go-redis/v9"
)

// A master that lost its scripts (restarted without persistence, or a
// replica promoted that never loaded them) answers NOSCRIPT to the reads of
// its own partitions only: the reads the same round sent to the other
// masters ran and took their entries into the executor's pending list. Those
// entries are handed out; only the reads that failed are sent again once the
// scripts are loaded (sending every read again read past the entries, which
// then stayed pending, never processed, while the executor held the
// partition).
func TestNoScriptOnOneMaster(t *testing.T) {
	if testing.Short() {
		t.Skip("cluster test")
	}
	t.Parallel()
	cl := redistest.StartCluster(t, 3)
	c := cl.Client(t)
	const partitions = 8
	r := rigOn(t, c, redistest.Prefix(t), partitions, 1000)
	st := r.st
	var mu sync.Mutex
	seen := map[int]int{}
	count := func(p int) int {
		mu.Lock()
		defer mu.Unlock()
		return seen[p]
	}
	e := r.executor("p", executor.Options{LockExpiry: 10 * time.Second}, func(ctx context.Context, feed core.Feed) error {
		for ds := feed.Next(1, 0); ds != nil; ds = feed.Next(1, 0) {
			mu.Lock()
			seen[ds[0].Partition]++
			mu.Unlock()
			feed.Done(ds)
		}
		return nil
	})
	r.run(e)
	all := make([]int, partitions)
	for p := range all {
		all[p] = p
	}
	owns(t, e, all...)
	// Every partition read once: the scripts are loaded on every master.
	for p := range partitions {
		r.send(p, 1)
	}
	redistest.Eventually(t, 10*time.Second, "the first entries", func() bool {
		for p := range partitions {
			if count(p) != 1 {
				return false
			}
		}
		return true
	})

	// The master of partition 0 forgets them; the entries go to the
	// partitions of the other masters (their sends need no script of the
	// flushed one), so a round reads those and partition 0 (idle: on
	// Cluster the idle partitions are read every 50ms) together.
	flushed := cl.MasterOf(t, st.PartitionKey(0))
	nc := redis.NewClient(&redis.Options{Addr: flushed})
	defer nc.Close()
	if err := nc.ScriptFlush(context.Background()).Err(); err != nil {
		t.Fatal(err)
	}
	var others []int
	for p := 1; p < partitions; p++ {
		if cl.MasterOf(t, st.PartitionKey(p)) != flushed {
			others = append(others, p)
		}
	}
	if len(others) == 0 {
		t.Fatal("every partition on one master")
	}
	const n = 5
	for _, p := range others {
		r.send(p, n)
	}
	redistest.Eventually(t, 10*time.Second, fmt.Sprintf("%d more entries in partitions %v", n, others), func() bool {
		for _, p := range others {
			if count(p) != 1+n {
				return false
			}
		}
		return true
	})
	// The flushed master's partitions are read again too.
	r.send(0, 1)
	redistest.Eventually(t, 10*time.Second, "an entry in partition 0", func() bool { return count(0) == 2 })
	mu.Lock()
	defer mu.Unlock()
	for p := range partitions {
		want := 1
		switch {
		case p == 0:
			want = 2
		case cl.MasterOf(t, st.PartitionKey(p)) != flushed:
			want = 1 + n
		}
		if seen[p] != want {
			t.Errorf("partition %d: %d entries handed out, want %d", p, seen[p], want)
		}
	}
}
