// The toucher: while tasks run, the worker claims their entries again at
// least every second, so that the leader's reclaimer does not take them
// for abandoned, and cancels those whose cancellation it missed on the
// channel. It also rereads the live concurrency (livesettings.go).

package task

import (
	"context"
	"errors"
	"time"

	"github.com/leatdev/leat/internal/taskrdb"
	"github.com/redis/go-redis/v9"
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
		pipe := w.share.bg.Pipeline()
		for l, ids := range byLevel {
			pipe.XClaimJustID(ctx, &redis.XClaimArgs{
				Stream: q.ks.TaskStream(q.name, l), Group: taskrdb.Group, Consumer: q.worker, MinIdle: 0, Messages: ids,
			})
		}
		flags := make([]*redis.StringCmd, len(runs))
		for i, r := range runs {
			flags[i] = pipe.HGet(ctx, q.ks.TaskPrefix(q.name)+r.f.ID, "c")
		}
		if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) && ctx.Err() == nil {
			q.log.Warn("touching running tasks failed", "error", err)
		}
		for i, r := range runs {
			if flags[i].Val() == "1" {
				r.cancel(ErrCancelled)
			}
		}
	}
}
