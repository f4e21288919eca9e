package executor

import (
	"context"
	"fmt"
	"time"

	"github.com/leatdev/leat/internal/scripts"
)

// join records e as a live member and announces it on the control stream.
func (e *Executor) join(ctx context.Context) error {
	if _, _, err := scripts.Heartbeat(ctx, e.client, e.membersKey(), e.id, e.opts.LockExpiry.Milliseconds()); err != nil {
		return fmt.Errorf("processor %q: join: %w", e.processor, err)
	}
	if err := e.announce(ctx, noticeJoin, e.id, 0); err != nil {
		return fmt.Errorf("processor %q: join: %w", e.processor, err)
	}
	e.log.Info("executor joined")
	return nil
}

// leave removes e from the membership, computes the assignment of the
// survivors and announces the departure, so they take over as soon as the
// locks are released rather than when the heartbeat expires.
func (e *Executor) leave(ctx context.Context) error {
	if err := e.client.ZRem(ctx, e.membersKey(), e.id).Err(); err != nil {
		return err
	}
	if err := e.rebalance(ctx); err != nil {
		return err
	}
	if err := e.announce(ctx, noticeLeave, e.id, 0); err != nil {
		return err
	}
	e.log.Info("executor left")
	return nil
}

func (e *Executor) membersKey() string { return e.keys.Members(e.stream.Name(), e.processor) }

// heartbeat refreshes e's membership every heartbeatEvery (LockExpiry/3, at
// most 1s). It finds members
// whose heartbeat expired (then it rebalances them away) and notices when e
// itself was reaped after a stall (then it joins again instead of failing).
func (e *Executor) heartbeat(ctx context.Context) {
	t := time.NewTicker(e.opts.heartbeatEvery())
	defer t.Stop()
	for beat := 1; ; beat++ {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if beat%trimCheckEvery == 0 {
			e.checkTrimmed(ctx)
		}
		hctx, cancel := context.WithTimeout(ctx, e.opts.heartbeatEvery())
		present, expired, err := scripts.Heartbeat(hctx, e.client, e.membersKey(), e.id, e.opts.LockExpiry.Milliseconds())
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
