// The toucher: while tasks run, the worker claims their entries again at
// least every second, so that the leader's reclaimer does not take them
// for abandoned, and cancels those whose cancellation it missed on the
// channel. It also rereads the live concurrency (livesettings.go).

package task

import (
	"context"
	"time"

	"github.com/leatdev/leat/internal/rdb"
)

// touch keeps the entries of running tasks from looking idle to the
// leader's reclaimer, cancels running tasks whose cancellation was missed on
// the channel, and applies concurrency changes.
func (w *worker) touch(ctx context.Context) {
	q := w.q
	every := min(q.set.visibility/3, time.Second)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		w.readLimit(ctx)
		w.mu.Lock()
		byLevel := map[int][]string{}
		var runs []*running
		for _, r := range w.active {
			byLevel[r.f.Level] = append(byLevel[r.f.Level], r.f.Entry)
			runs = append(runs, r)
		}
		w.mu.Unlock()
		if len(runs) == 0 {
			continue
		}
		claims := make([]rdb.Claim, 0, len(byLevel))
		for l, ids := range byLevel {
			claims = append(claims, rdb.Claim{Stream: q.ks.TaskStream(q.name, l), Entries: ids})
		}
		hashes := make([]string, len(runs))
		for i, r := range runs {
			hashes[i] = q.ks.TaskPrefix(q.name) + r.f.ID
		}
		flags, err := rdb.Touch(ctx, w.share.bg, q.worker, claims, hashes)
		if err != nil && ctx.Err() == nil {
			q.log.Warn("touching running tasks failed", "error", err)
		}
		for i, r := range runs {
			if flags[i] {
				r.cancel(ErrCancelled)
			}
		}
	}
}
