package runner

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/leatdev/leat/executor"
	"github.com/leatdev/leat/internal/core"
	"github.com/leatdev/leat/internal/tools/redistest"
)

// Staged writes: the last write of a key wins and is what Staged returns;
// Discard drops them all. The cache of applied values stays within its
// bound (here the stream has 1 partition: tableCacheTotal values).
func TestTableStagingAndCacheBound(t *testing.T) {
	p := testPartition(t, 0)
	p.Stage(core.TableWrite{Table: "t", Key: "a", Value: []byte("1")})
	p.Stage(core.TableWrite{Table: "t", Key: "b", Value: []byte("2")})
	p.Stage(core.TableWrite{Table: "t", Key: "a", Delete: true})
	p.Stage(core.TableWrite{Table: "u", Key: "a", Value: []byte("3")})
	if len(p.staged) != 3 {
		t.Fatalf("%d writes staged, want 3 (one per table and key)", len(p.staged))
	}
	if w, ok := p.Staged("t", "a"); !ok || !w.Delete {
		t.Fatalf("Staged(t, a) = %+v, %v; want the delete", w, ok)
	}
	if w, ok := p.Staged("u", "a"); !ok || string(w.Value) != "3" {
		t.Fatalf("Staged(u, a) = %+v, %v", w, ok)
	}
	p.Discard()
	if _, ok := p.Staged("t", "b"); ok || len(p.staged) != 0 {
		t.Fatal("writes left after Discard")
	}
	for i := range tableCacheTotal + 10 {
		p.cacheTable("t", fmt.Sprint(i), tableValue{ok: true})
		if len(p.tableCache) > tableCacheTotal {
			t.Fatalf("cache holds %d values, bound %d", len(p.tableCache), tableCacheTotal)
		}
	}
}

// Through a backlog, deliveries done with table writes are committed
// together: far fewer commits than deliveries, each key's last write
// applied, nothing left pending. A lone delivery with nothing buffered
// behind it is committed at once.
func TestTableCommitsGroupedThroughBacklog(t *testing.T) {
	t.Parallel()
	r := newRig(t, 1, 10_000)
	r.send(0, 2000)
	var done, backlog atomic.Int64
	var e *Executor
	e = r.executor("p", executor.Options{Prefetch: 500}, func(ctx context.Context, feed core.Feed) error {
		for {
			ds := feed.Next(1, 0)
			if len(ds) == 0 {
				return nil
			}
			n := done.Add(1)
			if n == 2001 {
				// Next committed the backlog before it handed this one out
				// (nothing was buffered behind the last one): its commits
				// are all counted
				backlog.Store(e.commits.Load())
			}
			feed.Stage(core.TableWrite{Table: "t", Key: fmt.Sprint(n % 10), Value: []byte(fmt.Sprint(n))})
			feed.Done(ds)
		}
	})
	e.commitInterval = time.Minute // grouped by what is buffered only, whatever the machine's load
	stop := r.run(e)
	redistest.Eventually(t, 20*time.Second, "2,000 deliveries done", func() bool { return done.Load() == 2000 })
	hash := r.keys.Table("s", "p", "t", 0)
	redistest.Eventually(t, 10*time.Second, "the last writes applied", func() bool {
		v, _ := r.client.HGet(context.Background(), hash, "0").Result()
		return v == "2000"
	})
	r.send(0, 1)
	redistest.Eventually(t, 10*time.Second, "a lone delivery committed", func() bool {
		v, _ := r.client.HGet(context.Background(), hash, "1").Result()
		return v == "2001"
	})
	if err := stop(); err != nil { // the commits are all counted
		t.Fatal(err)
	}
	before := backlog.Load()
	if before > 500 || before < 2000/commitMax {
		t.Errorf("%d commits for 2,000 deliveries of a backlog, want them grouped", before)
	}
	if c := e.commits.Load() - before; c != 1 {
		t.Errorf("%d commits for one delivery, want 1", c)
	}
	n, err := r.client.XPending(context.Background(), r.keys.Partition("s", 0), "p").Result()
	if err != nil || n.Count != 0 {
		t.Fatalf("pending %+v (%v), want none", n, err)
	}
	t.Logf("%d commits for 2,000 deliveries", before)
}
