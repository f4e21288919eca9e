package runner

import (
	"context"
	"fmt"
	"time"

	"github.com/leatdev/leat/internal/rdb"
)

// heartbeat refreshes e's membership every heartbeatEvery (LockExpiry/3, at
// most 1s). It finds members whose heartbeat expired (then it rebalances
// them away) and notices when e itself was reaped after a stall (then it
// joins again instead of failing).
func (e *Executor) heartbeat(ctx context.Context) {
	t := time.NewTicker(heartbeatEvery(e.opts))
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		hctx, cancel := context.WithTimeout(ctx, heartbeatEvery(e.opts))
		present, expired, err := rdb.Heartbeat(hctx, e.client, e.membersKey(), e.id, e.opts.LockExpiry.Milliseconds())
		cancel()
		switch {
		case err != nil:
			if ctx.Err() == nil {
				e.log.Warn("heartbeat failed", "error", err)
			}
			continue
		case !present:
			e.log.Warn("executor was reaped as dead; joining again")
			if err := e.announce(ctx, noticeJoin, e.id, 0); err != nil {
				e.log.Warn("join notice failed", "error", err)
			}
			e.requestRebalance(ctx)
		case len(expired) > 0:
			e.log.Info("members with expired heartbeats found", "members", fmt.Sprint(expired))
			e.requestRebalance(ctx)
		}
	}
}
