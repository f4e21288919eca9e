package runner

import (
	"context"
	"fmt"
	"time"

	"github.com/leatdev/leat/executor"
	"github.com/leatdev/leat/internal/core"
	"github.com/leatdev/leat/internal/rdb"
)

// Trimmed before read. XADD MAXLEN ~ trims the oldest entries whatever the
// consumer groups did with them, so a processor lagging more than the
// partition size loses entries without ever seeing them. Redis counts what
// was added to a stream and what a group read, so the executor checks every
// few heartbeat periods (on a ticker of its own), for each partition it
// owns, with one script reading every partition's counters (one call per
// check on a single server, whatever the number of partitions):
//
//	removed = entries-added - length        (trimmed or deleted so far)
//	unread  = removed - entries-read        (of those, never read by the group)
//
// Both counters must be known: a group is created or moved (by leat reset)
// with its entries-read set to the entries before its position (set_group.lua),
// and a counter Redis reports as unknown (nil) is skipped, never read as 0.
//
// A growth of unread is reported once, as one delivery with ErrTrimmed put
// before the next entries read, so it reaches the failure policy in order:
// halt stops the worker, quarantine stops the partition, dead-letter writes
// a dead letter saying how many entries were lost and before which ID.
// Entries that were read but trimmed before they were acknowledged come back
// from XAUTOCLAIM as deleted and reach the policy one by one.

// Near retention. The same counters tell the lag (entries-added minus
// entries-read: entries not yet read by the group). When it reaches
// RetentionWarning of the partition size, the next trims may drop entries
// the processor has not read: the check logs a warning once, and again
// only after the lag fell below the threshold and reached it anew.

// trimCheckEvery is the number of heartbeat periods between two checks.
const trimCheckEvery = 5

// trimChecker runs checkTrimmed every trimCheckEvery heartbeat periods
// until ctx is done.
func (e *Executor) trimChecker(ctx context.Context) {
	t := time.NewTicker(trimCheckEvery * heartbeatEvery(e.opts))
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			e.checkTrimmed(ctx)
		}
	}
}

// checkTrimmed runs the check on every partition e holds.
func (e *Executor) checkTrimmed(ctx context.Context) {
	e.mu.Lock()
	var parts []*partition
	for n, p := range e.owned {
		if e.ready[n] {
			parts = append(parts, p)
		}
	}
	e.mu.Unlock()
	if len(parts) == 0 {
		return
	}
	keys := make([]string, len(parts))
	for i, p := range parts {
		keys[i] = p.key
	}
	states, err := rdb.GroupCounters(ctx, e.client, keys, e.processor)
	if err != nil {
		return // checked again next time
	}
	for i, p := range parts {
		c := states[i]
		if !c.Exists || !c.Group || c.LastDeliveredID == "0-0" || !c.EntriesReadOK {
			// A stream or group missing (the fetcher repairs it), or Redis
			// does not know the counter (before the first read, after a move
			// without one, after XDEL in between): nothing can be told
			// until it does again.
			continue
		}
		unread := c.Added - c.Length - c.EntriesRead
		e.fetch.trimmed(p, unread, c.FirstID)
		e.checkRetention(p.n, c.Added-c.EntriesRead)
	}
}

// trimmed records that unread entries of p were trimmed before the group
// read them (before the entry first); a growth since the last report is
// delivered to the consumer ahead of the next entries.
func (f *fetcher) trimmed(p *partition, unread int64, first string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	s, ok := f.parts[p.n]
	if !ok || s.p != p {
		return
	}
	if unread <= s.trimReported {
		s.trimReported = max(unread, 0) // the group read past them: counting starts again
		return
	}
	lost := unread - s.trimReported
	s.trimReported = unread
	f.log.Error("entries trimmed before they were read", "partition", p.n, "entries", lost, "before", first)
	f.e.obs.Trimmed(f.e.stream.Name(), f.e.processor, p.n, lost)
	s.trimNotice = &core.Delivery{
		Entry:      core.Entry{Partition: p.n},
		Deliveries: 1,
		Err:        fmt.Errorf("%w: %d entries before %s were removed from the stream before the processor read them", core.ErrTrimmed, lost, first),
	}
}

// checkRetention warns once when the lag of partition n reaches
// RetentionWarning of the partition size.
func (e *Executor) checkRetention(n int, lag int64) {
	size := e.stream.Definition().Size
	risk := size > 0 && float64(lag) >= executor.RetentionWarning*float64(size)
	e.mu.Lock()
	changed := risk != e.atRisk[n]
	if changed {
		if e.atRisk == nil {
			e.atRisk = map[int]bool{}
		}
		e.atRisk[n] = risk
	}
	e.mu.Unlock()
	if changed && risk {
		e.log.Warn("lag near the partition size: retention may trim entries before they are read",
			"partition", n, "lag", lag, "size", size)
	}
}
