package executor

import (
	"context"
	"errors"
	"fmt"

	"github.com/leatdev/leat/internal/core"
	"github.com/leatdev/leat/internal/scripts"
	"github.com/redis/go-redis/v9"
)

// A partition's tables: the writes its loop body stages (core.Feed.Stage)
// are applied by the next Done in one script that checks the partition's
// lock, writes the tables' hashes and acknowledges the deliveries, so a
// table holds exactly the writes of the events acknowledged. The values
// read or committed are kept (tableCache), so reading a key costs Redis a
// round trip once per acquisition of the partition: while the lock is
// held, nobody else writes its tables.

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

// Partition implements core.Feed.
func (p *partition) Partition() int { return p.n }

// Processor implements core.Feed.
func (p *partition) Processor() string { return p.e.processor }

// Stage implements core.Feed.
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

// Staged implements core.Feed.
func (p *partition) Staged(table, key string) (core.TableWrite, bool) {
	i, ok := p.stagedAt[tableKey{table, key}]
	if !ok {
		return core.TableWrite{}, false
	}
	return p.staged[i], true
}

// Discard implements core.Feed.
func (p *partition) Discard() {
	clear(p.staged)
	p.staged = p.staged[:0]
	clear(p.stagedAt)
}

// ReadTable implements core.Feed.
func (p *partition) ReadTable(ctx context.Context, table, key string) ([]byte, bool, error) {
	if v, ok := p.tableCache[tableKey{table, key}]; ok {
		return v.v, v.ok, nil
	}
	v, err := p.e.app.HGet(ctx, p.tableHash(table), key).Bytes()
	if errors.Is(err, redis.Nil) {
		p.cacheTable(table, key, tableValue{})
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("table %q: %w", table, err)
	}
	p.cacheTable(table, key, tableValue{v: v, ok: true})
	return v, true, nil
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

// commit applies the staged writes and acknowledges ds, which must be the
// head of pending, in one script run while the lock holds this
// acquisition's value; transient errors are tried again while the lock is
// trusted. It reports whether ds are done. When they are not, the staged
// writes are dropped and ds stay pending: the lock was lost or the
// partition's work ended (the next owner processes them again), or the
// commit failed for good (ds are rejected: the failure policy applies).
func (p *partition) commit(ds []core.Delivery) bool {
	defer p.Discard()
	if p.lock == nil || p.ctx().Err() != nil {
		return false
	}
	writes := make([]scripts.TableWrite, len(p.staged))
	for i, w := range p.staged {
		writes[i] = scripts.TableWrite{Table: p.tableHash(w.Table), Field: w.Key, Value: w.Value, Delete: w.Delete}
	}
	list := ids(ds)
	var held bool
	err := ride(p.ctx(), func(ctx context.Context) error {
		var err error
		held, err = scripts.CommitTables(ctx, p.e.app, p.lockKey, p.lock.Value(), p.key, p.e.processor, list, writes)
		return err
	})
	switch {
	case err == nil && held:
		for _, w := range p.staged {
			p.cacheTable(w.Table, w.Key, tableValue{v: w.Value, ok: !w.Delete})
		}
		p.take(ds)
		return true
	case err == nil:
		p.log.Warn("table writes refused: the partition lock is held by another acquisition")
		p.cancel(errLockLost)
		return false
	case p.ctx().Err() != nil:
		// The partition's work ended meanwhile (the lock lost or no longer
		// trusted, or a hard stop): whether the script ran or not, the
		// next owner finds what Redis holds.
		return false
	}
	p.Reject(ds, fmt.Errorf("executor: table writes of processor %q not applied: %w", p.e.processor, err))
	return false
}
