package runner

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/leatdev/leat/executor"
	"github.com/leatdev/leat/internal/core"
	"github.com/leatdev/leat/internal/rdb"
	"github.com/leatdev/leat/internal/tools/redistest"
)

func TestPrefetchFor(t *testing.T) {
	for n, want := range map[int]int{0: 1000, 1: 1000, 8: 1000, 9: 910, 16: 512, 32: 256, 64: 128, 81: 101, 82: 100, 256: 100, 4096: 100} {
		if got := executor.PrefetchFor(n); got != want {
			t.Errorf("PrefetchFor(%d) = %d, want %d", n, got, want)
		}
	}
}

// The default buffer of a partition follows the stream's partitions, and a
// read of a partition with a backlog fills it in one go: a processor that
// holds its first event has exactly a buffer's worth pending (a read takes
// at most the room left in the buffer, all of it at first). A Prefetch set
// is kept.
func TestDefaultPrefetchByPartitions(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		partitions, prefetch, want int
	}{
		{16, 0, 512},
		{256, 0, 100},
		{16, 7, 7},
	} {
		t.Run(fmt.Sprintf("partitions=%d/prefetch=%d", tc.partitions, tc.prefetch), func(t *testing.T) {
			t.Parallel()
			r := newRig(t, tc.partitions, 10000)
			r.send(0, 1500)
			held := make(chan struct{}, 1)
			e := r.executor("p", executor.Options{Prefetch: tc.prefetch}, func(ctx context.Context, feed core.Feed) error {
				if len(feed.Next(1, 0)) == 0 {
					return nil
				}
				held <- struct{}{}
				<-ctx.Done() // holds the first event
				return nil
			})
			if e.opts.Prefetch != tc.want {
				t.Fatalf("prefetch %d, want %d", e.opts.Prefetch, tc.want)
			}
			r.run(e)
			select {
			case <-held:
			case <-time.After(20 * time.Second):
				t.Fatal("no event handed out")
			}
			redistest.Eventually(t, 10*time.Second, fmt.Sprintf("%d entries pending", tc.want), func() bool {
				return r.consumers(0, "p")[e.ID()] == int64(tc.want)
			})
		})
	}
}

// A partition whose read of new entries was full, or returned busyRead
// entries or more, is read again as soon as its buffer has room (collect);
// one whose read returned a few entries waits for the blocking read to see
// new ones.
func TestBusyPartitionReadAgain(t *testing.T) {
	p := testPartition(t, 0) // a buffer of 64
	f := p.e.fetch
	s := &fetchState{p: p}
	f.parts[p.n] = s
	seq := 0
	read := func(count, n int) bool {
		ds := make([]core.Delivery, n)
		for i := range ds {
			seq++
			ds[i] = core.Delivery{Entry: core.Entry{ID: fmt.Sprintf("3-%d", seq)}, Deliveries: 1}
		}
		f.put(fetchWork{s: s, count: count}, rdb.FetchResult{Held: true}, ds, n, "")
		if n > 0 {
			p.Done(p.Next(64, 0)) // drained: the buffer has room again
		}
		return len(f.collect()) == 1
	}
	for _, tc := range []struct {
		count, read int
		again       bool
	}{
		{64, 3, false},
		{64, busyRead - 1, false},
		{64, busyRead, true},
		{64, 40, true},
		{5, 5, true}, // full
		{64, 0, false},
	} {
		if got := read(tc.count, tc.read); got != tc.again {
			t.Errorf("a read of %d of %d: read again at once %v, want %v", tc.read, tc.count, got, tc.again)
		}
	}
}
