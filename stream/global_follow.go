package stream

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/leatdev/leat/internal/rdb"
)

// Run loads every partition of the table, then follows its change logs
// (and, when they are idle, checks once a second that none was deleted)
// until ctx ends (it returns nil then, within a second). Transient Redis
// errors are waited out (stream.IsTransient); any other error, a value the
// table's codec cannot decode, or a copy grown past its bounds
// (ErrGlobalTooLarge) ends it with that error, which Get and Ready return
// from then on. A Global runs once.
//
// Loading a partition reads where its change log ends, then its values
// (HSCAN, 500 keys per round trip), then follows the log from that end: a
// key written during the scan is seen with either value by the scan, and
// its change, after the end read first, is applied after it, so the copy
// ends up with the last value.
func (g *Global[V]) Run(ctx context.Context) error {
	if !g.running.CompareAndSwap(false, true) {
		return fmt.Errorf("%s: already running", g.Name())
	}
	c := g.t.stream.Catalog().Client()
	if err := g.checkRecorded(ctx); err != nil {
		return g.fail(err)
	}
	backoff := transientBackoff{}
	for p := 0; p < len(g.logs); {
		if err := g.load(ctx, p); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			if IsTransient(err) && backoff.wait(ctx) {
				continue
			}
			return g.fail(err)
		}
		p++
	}
	g.mu.Lock()
	g.loaded = true
	g.moved()
	g.mu.Unlock()
	cluster := rdb.IsCluster(c)
	after := make([]string, len(g.logs))
	checked := time.Now()
	for ctx.Err() == nil {
		g.mu.RLock()
		copy(after, g.last)
		g.mu.RUnlock()
		entries, err := rdb.ReadChanges(ctx, c, g.logs, after, globalCount, globalBlock)
		switch {
		case ctx.Err() != nil:
			return nil
		case err != nil && IsTransient(err):
			backoff.wait(ctx)
			continue
		case err != nil:
			return g.fail(fmt.Errorf("%s: read the change logs: %w", g.Name(), err))
		}
		backoff = transientBackoff{}
		if err := g.apply(ctx, entries); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			if IsTransient(err) {
				backoff.wait(ctx)
				continue
			}
			return g.fail(err)
		}
		if len(entries) > 0 {
			continue
		}
		if time.Since(checked) >= globalBlock {
			checked = time.Now()
			if err := g.restarted(ctx); err != nil && ctx.Err() == nil {
				if !IsTransient(err) {
					return g.fail(err)
				}
				backoff.wait(ctx)
			}
		}
		if cluster {
			select {
			case <-ctx.Done():
			case <-time.After(globalPoll):
			}
		}
	}
	return nil
}

// checkRecorded fails with ErrNoChangeLog when the processor registry
// records the table, as the processor's workers declare it, without a
// change log: their commits would leave nothing to follow, and the copy
// would never change. A processor not recorded yet is not checked.
func (g *Global[V]) checkRecorded(ctx context.Context) error {
	cat := g.t.stream.Catalog()
	full := g.t.stream.Name() + "/" + g.t.processor
	raw, ok, err := rdb.ProcessorDefinition(ctx, cat.Client(), cat.Keys(), full)
	if err != nil || !ok {
		return err
	}
	var def struct {
		Tables []TableDefinition `json:"tables"`
	}
	if err := json.Unmarshal(raw, &def); err != nil {
		return nil // a definition of another version: the workers will tell
	}
	for _, t := range def.Tables {
		if t.Name == g.t.name && t.Changes <= 0 {
			return fmt.Errorf("%w: the workers of processor %s declare table %q without stream.KeepChanges: declare it with the same KeepChanges in every program",
				ErrNoChangeLog, full, g.t.name)
		}
	}
	return nil
}

// restarted loads again the partitions whose change log ends before the
// last entry applied: the log was deleted (leat reset --tables clear
// deletes the table's values with it), and no commit since told.
func (g *Global[V]) restarted(ctx context.Context) error {
	ends, err := rdb.ChangeLogEnds(ctx, g.t.stream.Catalog().Client(), g.logs)
	if err != nil {
		return fmt.Errorf("%s: %w", g.Name(), err)
	}
	for p, end := range ends {
		g.mu.RLock()
		behind := CompareIDs(end, g.last[p]) < 0
		g.mu.RUnlock()
		if behind {
			if err := g.load(ctx, p); err != nil {
				return err
			}
		}
	}
	return nil
}

// load reads partition p whole (see Run) and replaces its part of the copy.
func (g *Global[V]) load(ctx context.Context, p int) error {
	c := g.t.stream.Catalog().Client()
	ends, err := rdb.ChangeLogEnds(ctx, c, g.logs[p:p+1])
	if err != nil {
		return fmt.Errorf("%s: partition %d: %w", g.Name(), p, err)
	}
	part := map[string]globalValue[V]{}
	var bytes int64
	g.mu.RLock()
	otherKeys, otherBytes := g.keys-len(g.parts[p]), g.bytes-partBytes(g.parts[p])
	g.mu.RUnlock()
	var cursor uint64
	for {
		kv, next, err := rdb.TableScan(ctx, c, g.hashes[p], cursor, 500)
		if err != nil {
			return fmt.Errorf("%s: partition %d: %w", g.Name(), p, err)
		}
		for i := 0; i+1 < len(kv); i += 2 {
			v, _, err := g.t.decode(kv[i], []byte(kv[i+1]))
			if err != nil {
				return err
			}
			size := int64(len(kv[i]) + len(kv[i+1]))
			if old, ok := part[kv[i]]; ok { // seen twice by HSCAN
				bytes -= old.size
			}
			part[kv[i]] = globalValue[V]{v: v, size: size}
			bytes += size
		}
		if err := g.bounds(otherKeys+len(part), otherBytes+bytes); err != nil {
			return err
		}
		if cursor = next; cursor == 0 {
			break
		}
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	g.keys += len(part) - len(g.parts[p])
	g.bytes += bytes - partBytes(g.parts[p])
	g.parts[p] = part
	g.last[p] = ends[0]
	g.loads[p]++
	g.moved()
	return nil
}

func partBytes[V any](part map[string]globalValue[V]) int64 {
	var n int64
	for _, v := range part {
		n += v.size
	}
	return n
}

// bounds fails with ErrGlobalTooLarge when keys or bytes are past the
// table's bounds.
func (g *Global[V]) bounds(keys int, bytes int64) error {
	if keys > g.spec.maxKeys {
		return fmt.Errorf("%w: %s holds more than %d keys (GlobalMaxKeys)", ErrGlobalTooLarge, g.Name(), g.spec.maxKeys)
	}
	if bytes > g.spec.maxBytes {
		return fmt.Errorf("%w: %s holds more than %d bytes of keys and values (GlobalMaxBytes)", ErrGlobalTooLarge, g.Name(), g.spec.maxBytes)
	}
	return nil
}

// apply applies the entries read from the change logs, in order per log.
// An entry that does not follow the last one applied (its "prev" is not
// that ID: entries were trimmed or the log was deleted; or it starts a log,
// which a reset may have emptied the table before) makes the partition be
// loaded again, which covers the partition's entries read with it.
func (g *Global[V]) apply(ctx context.Context, entries []rdb.ChangeEntry) error {
	reload := map[int]bool{}
	for _, e := range entries {
		p := e.Log
		if reload[p] {
			continue
		}
		g.mu.RLock()
		last := g.last[p]
		g.mu.RUnlock()
		if CompareIDs(e.ID, last) <= 0 {
			continue // covered by a load
		}
		if e.Prev != last || e.Prev == rdb.NoChanges {
			reload[p] = true
			continue
		}
		changes, err := rdb.DecodeChanges(e.Changes)
		if err != nil {
			return fmt.Errorf("%s: partition %d: entry %s: %w", g.Name(), p, e.ID, err)
		}
		if err := g.applyEntry(p, e.ID, changes); err != nil {
			return err
		}
	}
	for p := range reload {
		if err := g.load(ctx, p); err != nil {
			return err
		}
	}
	return nil
}

// applyEntry applies one entry's changes to partition p's part of the copy.
func (g *Global[V]) applyEntry(p int, id string, changes []rdb.Change) error {
	decoded := make([]globalValue[V], len(changes))
	for i, ch := range changes {
		if ch.Delete {
			continue
		}
		v, _, err := g.t.decode(ch.Key, ch.Value)
		if err != nil {
			return err
		}
		decoded[i] = globalValue[V]{v: v, size: int64(len(ch.Key) + len(ch.Value))}
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	part := g.parts[p]
	for i, ch := range changes {
		if old, ok := part[ch.Key]; ok {
			g.keys--
			g.bytes -= old.size
			delete(part, ch.Key)
		}
		if !ch.Delete {
			part[ch.Key] = decoded[i]
			g.keys++
			g.bytes += decoded[i].size
		}
	}
	g.last[p] = id
	g.moved()
	return g.bounds(g.keys, g.bytes)
}

// transientBackoff waits between attempts after transient errors: 100ms
// doubling up to 2s.
type transientBackoff struct{ d time.Duration }

// wait waits the next delay; it reports false when ctx ended first.
func (b *transientBackoff) wait(ctx context.Context) bool {
	b.d = min(max(2*b.d, 100*time.Millisecond), 2*time.Second)
	t := time.NewTimer(b.d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
