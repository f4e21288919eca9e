package runner

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/leatdev/leat/executor"
	"github.com/leatdev/leat/internal/core"
	"github.com/leatdev/leat/internal/tools/redistest"
)

// drainAll is a processor that acknowledges every event until its partition's
// work ends.
func drainAll(ctx context.Context, feed core.Feed) error {
	for ds := feed.Next(1, 0); ds != nil; ds = feed.Next(1, 0) {
		feed.Done(ds)
	}
	return nil
}

// Partitions that move on a join and on a graceful stop are taken by their
// new owner when the old one announces the release, not on a timer, and
// never before the release: every release finds the lock still held by the
// releasing acquisition. The lock expiry is long, so neither an expiry nor
// the fallback retry (LockExpiry/4) can explain an acquisition within the
// test.
func TestHandOverOnReleaseNotice(t *testing.T) {
	t.Parallel()
	r := newRig(t, 8, 1000)
	opts := executor.Options{LockExpiry: 40 * time.Second, Grace: time.Second}
	a := r.executor("p", opts, drainAll)
	stopA := r.run(a)
	owns(t, a, 0, 1, 2, 3, 4, 5, 6, 7)

	b := r.executor("p", opts, drainAll)
	r.run(b)
	joined := time.Now()
	waitOwned(t, b, 4)
	t.Logf("join: %d partitions moved in %s (indicative)", len(b.Owned()), time.Since(joined))

	stopped := time.Now()
	if err := stopA(); err != nil {
		t.Fatal(err)
	}
	owns(t, b, 0, 1, 2, 3, 4, 5, 6, 7)
	t.Logf("graceful stop: the rest moved %s after Run returned (indicative)", time.Since(stopped))

	if n := a.stats.released.Load(); n != 8 {
		t.Errorf("%d of 8 releases found the lock still held by the releasing acquisition", n)
	}
	if n := b.stats.retriedOnTimer.Load(); n != 0 {
		t.Errorf("%d lock attempts of the new owner waited for expiry or the fallback instead of the release notice", n)
	}
	if busy, woken := b.stats.busy.Load(), b.stats.retriedOnNotice.Load(); woken < busy {
		t.Errorf("%d attempts found the lock held, only %d retries were woken by a release notice", busy, woken)
	}
	t.Logf("new owner: %d attempts, %d found the lock held, %d retried on a release notice",
		b.stats.attempts.Load(), b.stats.busy.Load(), b.stats.retriedOnNotice.Load())
}

// waitOwned waits until e holds n partitions.
func waitOwned(t *testing.T, e *Executor, n int) {
	t.Helper()
	redistest.Eventually(t, 10*time.Second, fmt.Sprintf("executor owning %d partitions", n), func() bool { return len(e.Owned()) == n })
}
