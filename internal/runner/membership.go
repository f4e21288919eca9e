package runner

import (
	"context"
	"fmt"

	"github.com/leatdev/leat/internal/rdb"
)

// join records e as a live member and announces it on the control stream.
func (e *Executor) join(ctx context.Context) error {
	if _, _, err := rdb.Heartbeat(ctx, e.client, e.membersKey(), e.id, e.opts.LockExpiry.Milliseconds()); err != nil {
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
	if err := e.group.Leave(ctx, e.id); err != nil {
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

func (e *Executor) membersKey() string { return e.group.MembersKey() }
