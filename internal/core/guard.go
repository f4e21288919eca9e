package core

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/leatdev/leat/internal/rdb"
	"github.com/leatdev/leat/internal/topology"
	"github.com/redis/go-redis/v9"
)

// Sends that never trim unprocessed entries (Definition.WhenFull "refuse"
// or "wait"). Each partition's entries go in chunks, in order, through a
// script that adds a chunk only if, for every consumer group, its
// unprocessed entries (lag and pending) and the chunk fit in the partition
// size; then XADD MAXLEN ~ size, which keeps at least the last size
// entries, trims only processed ones. The chunks of all partitions share
// a pipelined round trip. A partition that has no room fails (refuse: the
// rest of its entries are not sent, to keep their order) or waits, with
// backoff, for its processors to make room (wait). On Redis Cluster, a
// chunk refused because of a failover is sent again like the XADDs of
// other streams (see sendRetry): after a reload of the slot map, with
// backoff, until ctx ends or sendRetryFor passes without progress.

// guardWaitMax caps the wait between two tries of a full partition.
const guardWaitMax = time.Second

// sendGuarded sends entries as described above, writing their IDs in ids.
func (c *Core) sendGuarded(ctx context.Context, entries []Entry, ids []string) error {
	size := c.def.Size
	ec := c.EntryCodec()
	chunkMax := int(min(int64(c.catalog.defaults.SendBatch), size))
	byPart := map[int][]int{} // partition -> indexes, in order
	var order []int           // partitions in first-seen order
	for i := range entries {
		p := entries[i].Partition
		if _, ok := byPart[p]; !ok {
			order = append(order, p)
		}
		byPart[p] = append(byPart[p], i)
	}
	_, cluster := c.catalog.client.(*redis.ClusterClient)
	// SCRIPT LOAD goes to every master: during a failover one is gone, and
	// the chunks tell which partitions cannot be sent (NOSCRIPT included).
	if err := rdb.Load(ctx, c.catalog.client); err != nil && !(cluster && retryable(err)) {
		return fmt.Errorf("stream %q: send: %w", c.def.Name, err)
	}
	var refused []error
	wait := 10 * time.Millisecond
	lastProgress := time.Now()
	for len(order) > 0 {
		type chunk struct {
			p   int
			idx []int
			cmd *redis.Cmd
		}
		chunks := make([]chunk, 0, len(order))
		_ = rdb.Pipelined(ctx, c.catalog.client, func(pipe redis.Pipeliner) {
			for _, p := range order {
				idx := byPart[p][:min(chunkMax, len(byPart[p]))]
				vals := make([][]any, len(idx))
				for j, i := range idx {
					vals[j] = entries[i].appendFields(make([]any, 0, 6+2*len(entries[i].Headers)), ec)
				}
				cmd := rdb.GuardedAdd(ctx, pipe, c.PartitionKey(p), size, vals)
				chunks = append(chunks, chunk{p: p, idx: idx, cmd: cmd})
			}
		}) // replies are read one by one
		next := order[:0:0]
		progress := false
		var failover error // of a chunk to send again
		for _, ch := range chunks {
			got, unprocessed, ok, err := rdb.ParseGuardedAdd(ch.cmd)
			switch {
			case err != nil && (rdb.IsNoScript(err) || cluster && retryable(err)):
				// Not run (or, connection lost, perhaps run): send again.
				failover = cmp.Or(failover, err)
				next = append(next, ch.p)
			case err != nil:
				return fmt.Errorf("stream %q: send: %w", c.def.Name, err)
			case ok:
				for j, i := range ch.idx {
					if j < len(got) {
						ids[i] = got[j]
					}
				}
				byPart[ch.p] = byPart[ch.p][len(ch.idx):]
				progress = true
				if len(byPart[ch.p]) > 0 {
					next = append(next, ch.p)
				}
			case len(ch.idx) > int(size):
				return fmt.Errorf("%w: stream %q, partition %d: a chunk of %d entries cannot fit a size of %d", ErrFull, c.def.Name, ch.p, len(ch.idx), size)
			case c.def.WhenFull == FullRefuse:
				refused = append(refused, fmt.Errorf("%w: stream %q, partition %d: %d entries not yet processed of a size of %d; %d not sent",
					ErrFull, c.def.Name, ch.p, unprocessed, size, len(byPart[ch.p])))
			default: // wait
				next = append(next, ch.p)
			}
		}
		order = next
		if len(order) == 0 {
			break
		}
		if progress {
			lastProgress = time.Now()
		}
		if failover != nil {
			if time.Since(lastProgress) > sendRetryFor {
				return fmt.Errorf("stream %q: send: entries of %d partitions not added after retrying for %s: %w",
					c.def.Name, len(order), sendRetryFor, failover)
			}
			topology.Reload(c.catalog.client)
			if rdb.IsNoScript(failover) {
				_ = rdb.Load(ctx, c.catalog.client) // a promoted replica may lack them; else the next round tells
			}
		}
		if progress && failover == nil {
			wait = 10 * time.Millisecond
			continue
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			if failover != nil {
				return fmt.Errorf("stream %q: %d partitions not sent: %w (retrying after: %w)", c.def.Name, len(order), ctx.Err(), failover)
			}
			return fmt.Errorf("stream %q: waiting for room in %d partitions: %w", c.def.Name, len(order), ctx.Err())
		case <-t.C:
		}
		wait = min(2*wait, guardWaitMax)
	}
	if len(refused) > 0 {
		return errors.Join(refused...)
	}
	return nil
}
