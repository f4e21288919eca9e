package runner

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/leatdev/leat/internal/core"
	"github.com/leatdev/leat/internal/rdb"
)

// A partition's tables: the writes its loop body stages (core.Stager.Stage)
// are applied with the acknowledgement of the deliveries Done marks, in one
// script that checks the partition's lock, writes the tables' hashes and
// acknowledges, so a table holds exactly the writes of the events
// acknowledged. The values read or committed are kept (tableCache), so
// reading a key costs Redis a round trip once per acquisition of the
// partition: while the lock is held, nobody else writes its tables.

// A partition keeps at most tableCacheTotal / its stream's partitions
// values (tableCacheMin at least): about a quarter of a million for all of
// an executor's partitions together. Past that the cache is emptied and
// filled again from Redis as keys are read.
const (
	tableCacheTotal = 1 << 18
	tableCacheMin   = 1024
)

type tableValue struct {
	v  []byte
	ok bool
}

// Stage implements core.Stager.
func (p *partition) Stage(w core.TableWrite) {
	if p.stagedAt == nil {
		p.stagedAt = map[tableKey]int{}
	}
	k := tableKey{w.Table, w.Key}
	if i, ok := p.stagedAt[k]; ok {
		p.staged[i] = w // the last write of a key is the one applied
		return
	}
	p.stagedAt[k] = len(p.staged)
	p.staged = append(p.staged, w)
}

type tableKey struct{ table, key string }

// StageKey implements core.Stager: a string key's write, as Stage's (in
// table "", which no table is called).
func (p *partition) StageKey(key string, value []byte, ttl time.Duration) {
	p.Stage(core.TableWrite{Key: key, Value: value, TTL: max(ttl, time.Millisecond)})
}

// StagedKey implements core.Stager.
func (p *partition) StagedKey(key string) bool {
	_, ok := p.Staged("", key)
	return ok
}

// Staged implements core.Stager: the write staged by the current loop body,
// else the one sealed with a delivery done and not yet committed.
func (p *partition) Staged(table, key string) (core.TableWrite, bool) {
	k := tableKey{table, key}
	if i, ok := p.stagedAt[k]; ok {
		return p.staged[i], true
	}
	if w, ok := p.sealedLast[k]; ok {
		return w, true
	}
	return core.TableWrite{}, false
}

// Discard implements core.Stager: the staged writes only (the sealed ones
// belong to deliveries done).
func (p *partition) Discard() {
	clear(p.staged)
	p.staged = p.staged[:0]
	clear(p.stagedAt)
}

// ReadTable implements core.Stager.
func (p *partition) ReadTable(ctx context.Context, table, key string) ([]byte, bool, error) {
	if v, ok := p.tableCache[tableKey{table, key}]; ok {
		return v.v, v.ok, nil
	}
	v, ok, err := rdb.TableGet(ctx, p.e.app, p.tableHash(table), key)
	if err != nil {
		return nil, false, fmt.Errorf("table %q: %w", table, err)
	}
	p.cacheTable(table, key, tableValue{v: v, ok: ok})
	return v, ok, nil
}

func (p *partition) tableHash(table string) string {
	return p.e.keys.Table(p.e.stream.Name(), p.e.processor, table, p.n)
}

func (p *partition) cacheTable(table, key string, v tableValue) {
	if p.tableCache == nil || len(p.tableCache) >= max(tableCacheMin, tableCacheTotal/p.e.stream.Partitions()) {
		p.tableCache = make(map[tableKey]tableValue)
	}
	p.tableCache[tableKey{table, key}] = v
}

// Deliveries done with table writes are not committed one Done at a time
// while more are already buffered: they are sealed (kept at the head of
// pending, their writes merged), and committed together, in one script, as
// soon as nothing is left to hand out at once, commitMax are sealed or the
// first of them was done commitInterval ago; and when the processor call
// ends, before anything else (a failure's retries or policy, a release).
// What a crash or a lost lock leaves uncommitted stays pending: the next
// owner processes those deliveries again, from the values before them.
const (
	commitInterval = 5 * time.Millisecond
	commitMax      = 256
)

// sealedDone is one Done call's deliveries (n of them) and their writes.
type sealedDone struct {
	n      int
	writes []core.TableWrite
}

// seal moves the staged writes of ds, the deliveries after the sealed ones,
// to the sealed writes, and commits them all when it is time (see above).
// It reports false when the commit failed (see flush).
func (p *partition) seal(ds []core.Delivery) bool {
	rest := p.pending[p.sealedN:]
	if len(ds) > len(rest) || (len(ds) > 0 && rest[0].ID != ds[0].ID) {
		panic(fmt.Sprintf("executor: deliveries %v are not the head of what is not done", ids(ds)))
	}
	if p.sealedN == 0 {
		p.sealedSince = time.Now()
	}
	p.sealedN += len(ds)
	if p.sealedLast == nil {
		p.sealedLast = map[tableKey]core.TableWrite{}
	}
	for _, w := range p.staged {
		p.sealedLast[tableKey{w.Table, w.Key}] = w
	}
	p.sealed = append(p.sealed, sealedDone{n: len(ds), writes: slices.Clone(p.staged)})
	p.Discard()
	if p.sealedN < commitMax && len(p.buf) > 0 && time.Since(p.sealedSince) < p.e.commitInterval && !p.stopping() {
		return true
	}
	return p.flush()
}

// flush commits the sealed deliveries and their writes, the last write of
// each key, in one script. It reports whether they are done (or none were
// sealed). When they are not, their writes are dropped and they stay
// pending: the lock was lost or the partition's work ended (the next owner
// processes them again); or the commit failed for good, and then each Done
// call's deliveries are committed alone, in order, up to the one that
// fails, which is rejected (the failure policy applies to it), the ones
// after it left pending to be handed out again (their writes were made on
// top of its).
func (p *partition) flush() bool {
	if p.sealedN == 0 {
		return true
	}
	// copies: take clears what it removes from pending, and Reject keeps ds
	ds, sealed := slices.Clone(p.pending[:p.sealedN]), p.sealed
	writes := make([]core.TableWrite, 0, len(p.sealedLast))
	for _, w := range p.sealedLast { // one per key: the order does not matter
		writes = append(writes, w)
	}
	p.sealedN, p.sealed = 0, nil
	clear(p.sealedLast)
	err := p.commit(ds, writes)
	if err == nil {
		return true
	}
	if errors.Is(err, errCommitEnded) || len(sealed) == 1 {
		if !errors.Is(err, errCommitEnded) {
			p.Reject(ds, err)
		}
		return false
	}
	for i, d := range sealed {
		one := slices.Clone(p.pending[:d.n])
		if err := p.commit(one, d.writes); err != nil {
			if !errors.Is(err, errCommitEnded) {
				p.Reject(one, err)
				for _, later := range sealed[i+1:] {
					p.handed += later.n // given to the processor: counted when handed out again
				}
			}
			return false
		}
	}
	return true // (the group's failure did not come again)
}

// errCommitEnded: a commit not applied because the partition's work ended.
var errCommitEnded = errors.New("executor: the partition's work ended before the commit")

// commit applies writes and acknowledges ds, the head of pending, in one
// script run while the lock holds this acquisition's value; transient
// errors are tried again while the lock is trusted. It returns nil when
// done (ds taken from pending), errCommitEnded when the lock was lost or
// the partition's work ended (nothing may have been applied: the next
// owner finds what Redis holds), or the error that failed it for good.
func (p *partition) commit(ds []core.Delivery, writes []core.TableWrite) error {
	if p.lock == nil || p.ctx().Err() != nil {
		return errCommitEnded
	}
	list := ids(ds)
	ws := make([]rdb.TableWrite, len(writes))
	for i, w := range writes {
		if w.Table == "" { // a string key (StageKey)
			ws[i] = rdb.TableWrite{Table: w.Key, Value: w.Value, TTL: w.TTL}
			continue
		}
		ws[i] = rdb.TableWrite{Table: p.tableHash(w.Table), Field: w.Key, Value: w.Value, Delete: w.Delete}
	}
	if len(writes) > 0 {
		ws = append(ws, p.changeLogs(writes)...) // tables with a change log (table_changes.go)
	}
	var held bool
	err := ride(p.ctx(), func(ctx context.Context) error {
		var err error
		held, err = rdb.CommitTables(ctx, p.e.app, p.lockKey, p.lock.Value(), p.key, p.e.processor, list, ws)
		return err
	})
	switch {
	case err == nil && held:
		p.e.commits.Add(1)
		for _, w := range writes {
			if w.Table != "" {
				p.cacheTable(w.Table, w.Key, tableValue{v: w.Value, ok: !w.Delete})
			}
		}
		p.take(ds)
		return nil
	case err == nil:
		p.log.Warn("table writes refused: the partition lock is held by another acquisition")
		p.cancel(errLockLost)
		return errCommitEnded
	case p.ctx().Err() != nil:
		return errCommitEnded
	}
	return fmt.Errorf("executor: table writes of processor %q not applied: %w", p.e.processor, err)
}
