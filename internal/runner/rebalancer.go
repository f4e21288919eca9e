package runner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/bsm/redislock"
	"github.com/leatdev/leat/internal/rdb"
	"github.com/leatdev/leat/rebalance"
)

// assignment is what the assignment key holds.
type assignment struct {
	Version int64                `json:"version"`
	Members rebalance.Assignment `json:"members"`
	Time    time.Time            `json:"time"`
}

// adminTTL bounds how long a crashed rebalancer can block the others.
const adminTTL = 5 * time.Second

func (e *Executor) loadAssignment(ctx context.Context) (assignment, error) {
	return loadAssignment(ctx, e.group, e.stream.Partitions())
}

// loadAssignment reads and checks the stored assignment of g (see
// parseAssignment).
func loadAssignment(ctx context.Context, g rdb.Group, partitions int) (assignment, error) {
	b, err := g.Assignment(ctx)
	if b == nil || err != nil {
		return assignment{}, err
	}
	return parseAssignment(b, partitions)
}

// errBadAssignment is matched by the error of an assignment that is JSON but
// that no rebalance stores.
var errBadAssignment = errors.New("invalid assignment")

// parseAssignment reads the assignment key's value for a stream of
// partitions partitions. It refuses an assignment no rebalance stores: a
// partition out of range, or listed twice, would make an executor read a
// partition that does not exist, or two executors fight over one. Such an
// assignment's error matches errBadAssignment, and the assignment returned
// has its version and no members, so that a rebalance replaces it.
// Partitions without an owner are fine (no member is alive, or one just
// left).
func parseAssignment(b []byte, partitions int) (assignment, error) {
	var a assignment
	if err := json.Unmarshal(b, &a); err != nil {
		return assignment{}, fmt.Errorf("assignment is not valid JSON: %w", err)
	}
	owner := make(map[int]string)
	for _, m := range slices.Sorted(maps.Keys(a.Members)) {
		for _, p := range a.Members[m] {
			if p < 0 || p >= partitions {
				return assignment{Version: a.Version}, fmt.Errorf("%w: version %d: member %q has partition %d, outside [0,%d)",
					errBadAssignment, a.Version, m, p, partitions)
			}
			if o, dup := owner[p]; dup {
				return assignment{Version: a.Version}, fmt.Errorf("%w: version %d: partition %d is listed by %q and %q",
					errBadAssignment, a.Version, p, o, m)
			}
			owner[p] = m
		}
	}
	return a, nil
}

// requestRebalance rebalances, logging a failure: the periodic check tries
// again.
func (e *Executor) requestRebalance(ctx context.Context) {
	if err := e.rebalance(ctx); err != nil && ctx.Err() == nil {
		e.log.Warn("rebalance failed; will retry", "error", err)
	}
	e.poke()
}

// maybeRebalance rebalances when the live members differ from those of the
// stored assignment: it covers notices missed and rebalancers that died.
// Live members are found on the server's clock, which their deadlines use.
func (e *Executor) maybeRebalance(ctx context.Context) {
	live, err := rdb.Alive(ctx, e.client, e.membersKey())
	if err != nil {
		return
	}
	a, err := e.loadAssignment(ctx)
	if errors.Is(err, errBadAssignment) {
		e.requestRebalance(ctx)
		return
	}
	if err != nil {
		return
	}
	stored := slices.Sorted(maps.Keys(a.Members))
	slices.Sort(live)
	if !slices.Equal(stored, live) {
		e.requestRebalance(ctx)
	}
}

// rebalance computes the assignment of the live members under the admin
// lock, stores it and announces it when it changed. Members whose
// heartbeat expired are removed and announced as dead.
func (e *Executor) rebalance(ctx context.Context) error {
	lctx, cancel := context.WithTimeout(ctx, 2*adminTTL)
	defer cancel()
	// A fresh random token per acquisition (redislock's default); the
	// executor's ID is metadata, for logs. The assignment is written only
	// while this acquisition still holds the lock and the stored version is
	// the one it was computed from, so a rebalancer that stalled while
	// holding the admin lock cannot overwrite a newer assignment.
	adminKey := e.group.AdminKey()
	admin, err := e.locker.Obtain(lctx, adminKey, adminTTL, &redislock.Options{
		Metadata:      " " + e.id,
		RetryStrategy: redislock.LinearBackoff(20 * time.Millisecond),
	})
	if err != nil {
		return fmt.Errorf("admin lock: %w", err)
	}
	defer admin.Release(context.WithoutCancel(ctx))

	live, dead, err := rdb.LiveMembers(ctx, e.client, e.membersKey())
	if err != nil {
		return err
	}
	cur, err := e.loadAssignment(ctx)
	if errors.Is(err, errBadAssignment) {
		// Replaced by one computed afresh, fenced by its version.
		e.log.Warn("stored assignment is invalid: replacing it", "error", err)
	} else if err != nil {
		return err
	}
	next := rebalance.Assign(e.stream.Partitions(), live, cur.Members)
	for _, d := range dead {
		if err := e.announce(ctx, noticeDead, d, 0); err != nil {
			return err
		}
		e.log.Info("dead executor removed", "dead", d)
	}
	if equalAssignments(cur.Members, next) {
		return nil
	}
	a := assignment{Version: cur.Version + 1, Members: next, Time: time.Now().UTC()}
	b, err := json.Marshal(a)
	if err != nil {
		return err
	}
	if err := e.storeAssignment(ctx, adminKey, admin.Token()+admin.Metadata(), cur.Version, b); err != nil {
		return err
	}
	e.log.Info("rebalanced", "version", a.Version, "members", len(live), "moves", cur.Members.Moves(next))
	return e.announce(ctx, noticeAssigned, e.id, a.Version)
}

// storeAssignment writes the assignment b computed from version from, fenced
// by the admin lock value (see rdb.StoreAssignment).
func (e *Executor) storeAssignment(ctx context.Context, adminKey, adminValue string, from int64, b []byte) error {
	if err := rdb.StoreAssignment(ctx, e.client, adminKey, e.group.AssignmentKey(), adminValue, from, b); err != nil {
		return fmt.Errorf("assignment not stored: %w", err)
	}
	return nil
}

func equalAssignments(a, b rebalance.Assignment) bool {
	if len(a) != len(b) {
		return false
	}
	for m, ps := range a {
		qs, ok := b[m]
		if !ok || !slices.Equal(ps, qs) {
			return false
		}
	}
	return true
}
