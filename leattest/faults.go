package leattest

import (
	"context"
	"time"

	"github.com/leatdev/leat/app"
	"github.com/leatdev/leat/internal/rdb"
)

// LoseLock takes the lock of processor on partition p of stream away from
// its holder, as an expiry would: the holder finds it gone at its next
// refresh (within a third of the lock expiry, a second here), its
// processor's context is cancelled, and the events it did not acknowledge
// are handed out again, to it or another worker, once it takes the lock
// again. Call it from a processor to inject the loss in the middle of an
// event or a batch.
func (k *Kit) LoseLock(a *app.App, stream, processor string, p int) {
	k.t.Helper()
	if _, err := rdb.DeleteKeys(context.Background(), k.client, []string{keysOf(a).Lock(stream, processor, p)}); err != nil {
		k.t.Errorf("leattest: lose the lock: %v", err)
	}
}

// Now returns the time of the kit's clock, which background schedules of
// its apps follow.
func (k *Kit) Now() time.Time { return k.clock.Now() }

// Advance moves the kit's clock forward by d: background tasks whose next
// run falls within it run (one run for several ticks, as after a pause).
// Leases, locks and timeouts are not affected: they keep real time.
func (k *Kit) Advance(d time.Duration) { k.clock.Advance(d) }

// WaitScheduled waits until n background schedules are waiting on the
// kit's clock for their next run (all of an app's periodic tasks have run
// what was due), failing the test after 20s.
func (k *Kit) WaitScheduled(n int) {
	k.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	if !k.clock.WaitSleepers(ctx, n) {
		k.t.Fatalf("leattest: %d schedules waiting on the clock after %s, want %d", k.clock.Sleepers(), waitTimeout, n)
	}
}
