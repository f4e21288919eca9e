package runner

import (
	"cmp"
	"context"
	"errors"
	"runtime"
	"slices"

	"github.com/leatdev/leat/internal/core"
	"github.com/leatdev/leat/internal/rdb"
	"github.com/redis/go-redis/v9"
)

// The scripted read: the fenced fetch script (fetch.lua) of each partition,
// all in one pipelined round trip, each checking the partition's lock in
// Redis before it reads.
//
// When it is used: recovery (XAUTOCLAIM of the group's pending entries),
// the first read of a partition the blocking read saw new entries on, the
// reads of a transaction that Redis aborted, and every read on Cluster,
// where the partitions' locks and streams live in different slots and no
// transaction spans them.
//
// What it costs: one round trip where the transaction takes two, but its
// reply goes through Lua, which costs Redis more per entry than a plain
// XREADGROUP; so on a single server backlogs go to the transaction.

// maxWokeRead bounds the read of a partition the blocking read saw new
// entries on, when the transaction serves the partitions with more: the
// fetch script returns its entries through Lua, which costs Redis more than
// the transaction per entry, so a wake-up that found a partition with many
// entries takes the first ones at once and the rest in the next read.
const maxWokeRead = 100

// maxParsed bounds the entries readScripted keeps room for between reads.
const maxParsed = 1024

// readScripted runs the fenced fetch script of every partition in work in
// one pipeline (a single partition's read goes without one). It returns the
// reads that failed, and the first error.
//
// A read that fails with NOSCRIPT did not run: after the scripts are loaded,
// those reads alone are sent again. The others of the round ran (on Cluster,
// only a master that lost its scripts answers NOSCRIPT), and their entries
// are now in this executor's pending list: sent again, they would read past
// them, and nothing would hand them out while it holds the partition.
func (f *fetcher) readScripted(ctx context.Context, work []fetchWork) ([]fetchWork, error) {
	// exec sends the reads of work[i] for each i in idx.
	exec := func(idx []int) error {
		var c rdb.Runner = f.rounds
		if f.tx.ok() {
			c = f.tx.get() // never sends a command twice (connections.go)
		}
		// A wake-up's read goes alone, without a pipeline.
		err := rdb.FetchEvents(ctx, c, len(idx), func(p rdb.Processor, j int) *rdb.RawFetch {
			w := &work[idx[j]]
			w.fetch = rdb.FetchRaw(ctx, p, w.s.fetchArgs, w.s.p.lock.Value(), w.count, w.cursor)
			return w.fetch
		})
		var rerr redis.Error
		if err != nil && !errors.As(err, &rerr) {
			f.tx.reset() // broken off: the next read opens another connection
		}
		return err
	}
	// Replies are read raw (see rdb.EachRawEntry): an error reply such
	// as NOSCRIPT comes out of the parse, not Exec.
	type parsed struct {
		res rdb.FetchResult
		ds  []core.Delivery
		err error
	}
	results := make([]parsed, len(work))
	ec := f.e.stream.EntryCodec()
	// The reads' entries go one after the other in one reused slice, each
	// read's a full slice of it (deliver appends to it); put copies them.
	all := f.parsed[:0]
	defer func() { f.keepParsed(all) }()
	// parse parses the replies of work[i] for each i in idx, and returns
	// those that failed with NOSCRIPT.
	parse := func(idx []int) (noScript []int) {
		for _, i := range idx {
			w := work[i]
			from := len(all)
			res, err := rdb.ParseRawFetch(w.fetch, func(id string, fields [][]byte) error {
				all = append(all, rawDelivery(w.s.p.n, ec, id, fields))
				return nil
			})
			results[i] = parsed{res, nil, err}
			if rdb.IsNoScript(err) {
				noScript = append(noScript, i)
			}
			results[i].ds = all[from:len(all):len(all)]
		}
		return noScript
	}
	every := f.every[:0]
	for i := range work {
		every = append(every, i)
	}
	f.every = every
	err := exec(every)
	if again := parse(every); len(again) > 0 {
		// On Cluster, SCRIPT LOAD fails while a master is gone: the reads
		// of the nodes without the scripts then fail alone (see isolate).
		if lerr := rdb.Load(ctx, f.rounds); lerr == nil {
			err = exec(again)
			parse(again)
		} else if !f.perNode() {
			return nil, lerr
		}
	}
	var firstErr error
	var failed []fetchWork
	woken := false // entries of a wake-up's read were handed over
	for i, w := range work {
		res, ds, err := results[i].res, results[i].ds, results[i].err
		if err != nil {
			if isNoGroup(err) {
				w.s.noGroup = true
				continue
			}
			firstErr = cmp.Or(firstErr, err)
			failed = append(failed, w)
			continue
		}
		f.deliver(w, res, ds)
		woken = woken || (w.woke && len(ds) > 0)
	}
	if firstErr == nil && err != nil && !isNoGroup(err) {
		firstErr = err
	}
	f.recheck(failed)
	if woken {
		// The idle path's latency: the consumers just handed events run on
		// this P at once, rather than when a parked thread is woken to take
		// them; the fetcher goes on when they block, or on another P.
		runtime.Gosched()
	}
	return failed, firstErr
}

// deliver puts the entries of one scripted read (ds, in the order read) in
// the partition's buffer, with their delivery counts and the pending entries
// found deleted.
func (f *fetcher) deliver(w fetchWork, res rdb.FetchResult, ds []core.Delivery) {
	s := w.s
	read := len(ds)
	for i := range ds {
		if i < len(res.Counts) && res.Counts[i] > 0 {
			ds[i].Deliveries = res.Counts[i]
		}
	}
	for _, id := range res.Deleted {
		ds = append(ds, core.Delivery{Entry: core.Entry{ID: id, Partition: s.p.n}, Deliveries: 2, Err: core.ErrTrimmed})
	}
	if len(res.Deleted) > 0 {
		slices.SortFunc(ds, func(a, b core.Delivery) int { return core.CompareIDs(a.ID, b.ID) })
	}
	last := res.Last
	if read > 0 {
		last = ds[read-1].ID // before the deleted ones were sorted in: recovery does not use it
	}
	f.put(w, res, ds, read, last)
}

// keepParsed empties all, the entries of a read parsed into f.parsed, and
// keeps its memory for the next read unless it grew beyond maxParsed.
func (f *fetcher) keepParsed(all []core.Delivery) {
	clear(all)
	if cap(all) <= maxParsed {
		f.parsed = all[:0]
	}
}
